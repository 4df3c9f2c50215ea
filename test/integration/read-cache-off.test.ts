/**
 * Vault's `disable_cache = true`: the node serves without its storage read cache. KV v2 (metadata
 * and versions), tokens, policies and mounts all read through the decodes the cache otherwise
 * keys; every answer must still follow each write at once.
 */
import { startTestNode } from '../support/in-process.js';

test('with the read cache off, every read follows each write: KV v2 versions, a policy, a token', async () => {
  const n = await startTestNode({ readCache: { disabled: true } });
  // The setting reached the node's storage: nothing is kept, though every answer below reads.
  const cachedNothing = (): void => expect(n.node.engine.cachedValues).toBe(0);
  const v = n.vault();
  expect((await v.post('sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
  for (let i = 1; i <= 3; i++) {
    expect((await v.put('secret/data/app', { data: { n: i } })).status).toBe(200);
    const r = await v.get('secret/data/app');
    expect({ n: r.body.data.data.n, version: r.body.data.metadata.version }).toEqual({ n: i, version: i });
  }
  expect((await v.get('secret/data/app', { query: { version: '1' } })).body.data.data.n).toBe(1);
  expect((await v.request('LIST', 'secret/metadata')).body.data.keys).toEqual(['app']);
  expect((await v.put('sys/policies/acl/reader', { policy: 'path "secret/data/app" { capabilities = ["read"] }' })).status).toBe(204);
  const token = (await v.post('auth/token/create', { policies: ['reader'] })).body.auth.client_token as string;
  expect((await n.vault(token).get('secret/data/app')).body.data.data.n).toBe(3);
  expect((await v.put('sys/policies/acl/reader', { policy: 'path "secret/data/other" { capabilities = ["read"] }' })).status).toBe(204);
  expect((await n.vault(token).get('secret/data/app')).status).toBe(403);
  expect((await v.post('auth/token/revoke', { token })).status).toBe(204);
  expect((await n.vault(token).get('secret/data/other')).status).toBe(403);
  cachedNothing();
  await n.stop();
});

test('with a cache_size, the node keeps at most that many values', async () => {
  const n = await startTestNode({ readCache: { entries: 5 } });
  const v = n.vault();
  expect((await v.post('sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
  for (let i = 0; i < 10; i++) {
    expect((await v.put(`secret/data/k${i}`, { data: { i } })).status).toBe(200);
    expect((await v.get(`secret/data/k${i}`)).body.data.data.i).toBe(i);
  }
  expect(n.node.engine.cachedValues).toBeGreaterThan(0);
  expect(n.node.engine.cachedValues).toBeLessThanOrEqual(5);
});
