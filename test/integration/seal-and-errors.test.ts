/**
 * The node's seal lifecycle and the error contract of WIRE.md section 2, over real HTTP. The seal
 * lifecycle runs on LevelDB and on PostgreSQL (forEachEngine, test/support/engines.ts); the error
 * contract, which no storage engine shapes, on LevelDB.
 */
import { request } from 'node:http';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { forEachEngine } from '../support/engines.js';

forEachEngine(() => {
  describe('seal lifecycle', () => {
    let n: TestNode;
    afterEach(async () => n?.stop());

    it('starts uninitialised: 503 for data paths, 501 health, init returns shares and a root token', async () => {
      n = await startTestNode({ initialize: false });
      expect((await n.call('GET', 'sys/init', undefined, { token: null })).body).toEqual({ initialized: false });
      expect((await n.call('GET', 'sys/health', undefined, { token: null })).status).toBe(501);
      const r = await n.call('GET', 'secret/data/x');
      expect(r.status).toBe(503);
      expect(r.body.errors[0]).toMatch(/not initialized/);

      const init = await n.call('PUT', 'sys/init', { secret_shares: 5, secret_threshold: 3 }, { token: null });
      expect(init.status).toBe(200);
      expect(init.body.keys).toHaveLength(5);
      expect(init.body.keys_base64).toHaveLength(5);
      expect(init.body.root_token).toMatch(/^hvs\.[0-9A-Za-z]{24}$/);
      const again = await n.call('PUT', 'sys/init', { secret_shares: 1, secret_threshold: 1 }, { token: null });
      expect(again.status).toBe(400);

      const status = await n.call('GET', 'sys/seal-status', undefined, { token: null });
      expect(status.body).toMatchObject({ type: 'shamir', initialized: true, sealed: true, t: 3, n: 5, progress: 0 });
      expect((await n.call('GET', 'sys/health', undefined, { token: null })).status).toBe(503);
      expect((await n.call('GET', 'sys/health?sealedcode=299', undefined, { token: null })).status).toBe(299);

      const p1 = await n.call('PUT', 'sys/unseal', { key: init.body.keys[4] }, { token: null });
      expect(p1.body).toMatchObject({ sealed: true, progress: 1 });
      expect(p1.body.nonce).not.toBe('');
      await n.call('PUT', 'sys/unseal', { key: init.body.keys_base64[0] }, { token: null });
      const done = await n.call('PUT', 'sys/unseal', { key: init.body.keys[2] }, { token: null });
      expect(done.body).toMatchObject({ sealed: false, progress: 0 });
      const health = await n.call('GET', 'sys/health', undefined, { token: null });
      expect(health.status).toBe(200);
      expect(health.body).toMatchObject({ initialized: true, sealed: false, replication_dr_mode: 'disabled', replication_performance_mode: 'disabled' });
    });

    it('seals on request (sudo), answers 503 while sealed, and keeps its data across seal and restart', async () => {
      n = await startTestNode();
      expect((await n.call('POST', 'sys/mounts/kv', { type: 'kv', options: { version: '2' } })).status).toBe(204);
      expect((await n.call('PUT', 'kv/data/app', { data: { password: 'hunter2' } })).status).toBe(200);

      const unprivileged = await n.call('POST', 'auth/token/create', { policies: ['default'] });
      expect((await n.call('PUT', 'sys/seal', {}, { token: unprivileged.body.auth.client_token })).status).toBe(403);
      expect((await n.call('PUT', 'sys/seal', {})).status).toBe(204);
      const sealed = await n.call('GET', 'kv/data/app');
      expect(sealed.status).toBe(503);
      expect(sealed.body).toEqual({ errors: ['Vault is sealed'] });

      const wrong = await startTestNode();
      const bad = await n.call('PUT', 'sys/unseal', { key: wrong.unsealKeys[0] }, { token: null });
      await n.call('PUT', 'sys/unseal', { key: wrong.unsealKeys[1] }, { token: null });
      await wrong.stop();
      expect(bad.status).toBe(200);
      expect((await n.call('GET', 'sys/seal-status', undefined, { token: null })).body.sealed).toBe(true);

      for (const key of n.unsealKeys.slice(0, 2)) await n.call('PUT', 'sys/unseal', { key }, { token: null });
      expect((await n.call('GET', 'kv/data/app')).body.data.data).toEqual({ password: 'hunter2' });
    });
  });
});

describe('error contract', () => {
  let n: TestNode;
  beforeAll(async () => {
    n = await startTestNode();
  });
  afterAll(async () => n.stop());

  it.each([
    ['malformed JSON', 'POST', 'sys/mounts/x', '{"type": "kv",', 400],
    ['a JSON array body', 'POST', 'sys/mounts/x', '[1,2]', 400],
    ['a wrong type', 'POST', 'sys/mounts/x', '{"type": 7}', 400],
    ['a missing required field', 'POST', 'sys/policies/acl/p', '{}', 400],
    ['a bad policy', 'POST', 'sys/policies/acl/p', '{"policy": "path \\"x\\" { capabilities = [\\"fly\\"] }"}', 400],
    ['an unknown sys path', 'GET', 'sys/nope', undefined, 404],
    ['an unmounted path', 'GET', 'nothing/here', undefined, 404],
    ['an empty segment', 'GET', 'secret//data', undefined, 400],
    ['an unsupported method on a route', 'DELETE', 'sys/seal-status', undefined, 405],
    ['a bad duration', 'POST', 'auth/token/create', '{"ttl": "soon"}', 400],
  ])('%s -> %i with {"errors": [...]}', async (_name, method, path, raw, status) => {
    const r = await n.call(method, path, undefined, raw === undefined ? {} : { raw, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(status);
    expect(Array.isArray(r.body.errors)).toBe(true);
    if (status !== 404) expect(r.body.errors.length).toBeGreaterThan(0);
  });

  it('rejects relative segments that a raw client sends (fetch would normalise them away)', async () => {
    for (const path of ['/v1/secret/../sys/mounts', '/v1/secret/%2E%2E/sys/mounts', '/v1/./sys/mounts']) {
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: new URL(n.apiAddr).port, path, headers: { 'X-Vault-Token': n.rootToken } }, (r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).errors[0]).toMatch(/relative segment/);
    }
  });

  it('refuses requests without, with an unknown, or with a revoked token (403)', async () => {
    expect((await n.call('GET', 'sys/mounts', undefined, { token: null })).status).toBe(403);
    expect((await n.call('GET', 'sys/mounts', undefined, { token: 'hvs.AAAAAAAAAAAAAAAAAAAAAAAA' })).status).toBe(403);
    const child = await n.call('POST', 'auth/token/create', { policies: ['default'] });
    const token = child.body.auth.client_token as string;
    expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token })).status).toBe(200);
    expect((await n.call('POST', 'auth/token/revoke', { token })).status).toBe(204);
    expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token })).status).toBe(403);
  });

  it('answers 413 for a body over the limit and stores nothing', async () => {
    const before = (await n.call('GET', 'sys/replication/status', undefined, { token: null })).body.data.dr.merkle_root;
    const big = JSON.stringify({ data: { blob: 'x'.repeat(33 * 1024 * 1024) } });
    const r = await n.call('PUT', 'secret/data/big', undefined, { raw: big });
    expect(r.status).toBe(413);
    expect(r.body.errors[0]).toMatch(/too large|larger/);
    const after = (await n.call('GET', 'sys/replication/status', undefined, { token: null })).body.data.dr.merkle_root;
    expect(after).toBe(before);
  });

  it('accepts the LIST method and ?list=true', async () => {
    await n.call('POST', 'sys/mounts/lst', { type: 'kv' });
    await n.call('PUT', 'lst/a/b', { v: 1 });
    await n.call('PUT', 'lst/c', { v: 1 });
    expect((await n.call('LIST', 'lst/')).body.data.keys).toEqual(['a/', 'c']);
    expect((await n.call('GET', 'lst?list=true')).body.data.keys).toEqual(['a/', 'c']);
  });
});
