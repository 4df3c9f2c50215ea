/**
 * Namespaces (header and path-prefix addressing, nesting), mounts (enable, list, tune, disable,
 * local mounts in the local Merkle subtree) and KV through the router.
 */
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
});
afterAll(async () => n.stop());

describe('namespaces', () => {
  it('creates nested namespaces and addresses them by header and by path prefix', async () => {
    const team = await n.call('POST', 'sys/namespaces/team', {});
    expect(team.status).toBe(200);
    expect(team.body.data.path).toBe('team/');
    const app = await n.call('POST', 'sys/namespaces/app', {}, { headers: { 'X-Vault-Namespace': 'team' } });
    expect(app.body.data.path).toBe('team/app/');
    expect((await n.call('POST', 'sys/namespaces/x/y', {})).status).toBe(400);

    const listed = await n.call('LIST', 'sys/namespaces', undefined, { headers: { 'X-Vault-Namespace': 'team/' } });
    expect(listed.body.data.keys).toEqual(['app/']);
    expect(listed.body.data.key_info['app/'].path).toBe('team/app/');

    // A mount in team/app, reached three ways.
    expect((await n.call('POST', 'sys/mounts/kv', { type: 'kv-v2' }, { headers: { 'X-Vault-Namespace': 'team/app' } })).status).toBe(204);
    expect((await n.call('PUT', 'team/app/kv/data/s', { data: { v: 'ns' } })).status).toBe(200);
    const viaHeader = await n.call('GET', 'kv/data/s', undefined, { headers: { 'X-Vault-Namespace': 'team/app' } });
    expect(viaHeader.body.data.data).toEqual({ v: 'ns' });
    const mixed = await n.call('GET', 'app/kv/data/s', undefined, { headers: { 'X-Vault-Namespace': 'team' } });
    expect(mixed.body.data.data).toEqual({ v: 'ns' });
    // Not visible from the root namespace's mount table.
    expect((await n.call('GET', 'kv/data/s')).status).toBe(404);
    expect(Object.keys((await n.call('GET', 'sys/mounts')).body.data)).not.toContain('kv/');

    expect((await n.call('DELETE', 'sys/namespaces/app', undefined, { headers: { 'X-Vault-Namespace': 'team' } })).status).toBe(400);
    await n.call('DELETE', 'sys/mounts/kv', undefined, { headers: { 'X-Vault-Namespace': 'team/app' } });
    expect((await n.call('DELETE', 'sys/namespaces/app', undefined, { headers: { 'X-Vault-Namespace': 'team' } })).status).toBe(204);
    expect((await n.call('GET', 'kv/data/s', undefined, { headers: { 'X-Vault-Namespace': 'team/app' } })).status).toBe(400);
  });

  it('refuses the names Vault reserves, at any depth, with Vault\'s message, and creates nothing', async () => {
    expect((await n.call('POST', 'sys/namespaces/keep', {})).status).toBe(200);
    const before = (await n.call('LIST', 'sys/namespaces')).body.data;
    for (const name of ['root', 'sys', 'audit', 'auth', 'cubbyhole', 'identity']) {
      const message = [`"${name}/" is a reserved path and cannot be used as a namespace name`];
      for (const [path, headers] of [[`sys/namespaces/${name}`, {}], [`sys/namespaces/${name}`, { 'X-Vault-Namespace': 'keep' }], [`sys/namespaces/keep/${name}`, {}]] as const) {
        const r = await n.call('POST', path, {}, { headers });
        expect([path, r.status, r.body.errors]).toEqual([path, 400, message]);
      }
    }
    expect((await n.call('LIST', 'sys/namespaces')).body.data).toEqual(before);
    expect(await n.call('LIST', 'sys/namespaces', undefined, { headers: { 'X-Vault-Namespace': 'keep' } })).toMatchObject({ status: 404, body: { errors: [] } });
    // A name that merely contains one is a name like any other.
    expect((await n.call('POST', 'sys/namespaces/identity-team', {})).status).toBe(200);
  });

  it('refuses replication endpoints outside the root namespace, but not status', async () => {
    const r = await n.call('POST', 'sys/replication/merkle-check', {}, { headers: { 'X-Vault-Namespace': 'team' } });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(/root namespace/);
    const s = await n.call('GET', 'sys/replication/dr/status', undefined, { headers: { 'X-Vault-Namespace': 'team' } });
    expect(s.status).toBe(200);
  });
});

describe('mounts', () => {
  it('enables, lists, reads, tunes and disables a mount, removing its data', async () => {
    expect((await n.call('POST', 'sys/mounts/apps', { type: 'kv', description: 'apps', options: { version: '2' } })).status).toBe(204);
    expect((await n.call('POST', 'sys/mounts/apps/nested', { type: 'kv' })).status).toBe(400);
    expect((await n.call('POST', 'sys/mounts/other', { type: 'database' })).status).toBe(400);
    const list = await n.call('GET', 'sys/mounts');
    expect(list.body.data['apps/']).toMatchObject({ type: 'kv', description: 'apps', options: { version: '2' }, local: false });
    expect((await n.call('POST', 'sys/mounts/apps/tune', { default_lease_ttl: '1h', description: 'tuned' })).status).toBe(204);
    const tune = await n.call('GET', 'sys/mounts/apps/tune');
    expect(tune.body.data).toMatchObject({ default_lease_ttl: 3600, description: 'tuned' });

    await n.call('PUT', 'apps/data/a', { data: { k: 1 } });
    expect((await n.call('DELETE', 'sys/mounts/apps')).status).toBe(204);
    expect((await n.call('GET', 'apps/data/a')).status).toBe(404);
    await n.call('POST', 'sys/mounts/apps', { type: 'kv', options: { version: '2' } });
    expect((await n.call('GET', 'apps/data/a')).status).toBe(404);
  });

  it('keeps a local mount and its data in the local Merkle subtree only', async () => {
    const roots = async () => {
      const r = await n.call('POST', 'sys/replication/merkle-check', {});
      const t = r.body.data.merkle_corruption_report.corrupted_tree_map;
      return { replicated: t['1'].root_hash as string, local: t['2'].root_hash as string };
    };
    await n.call('POST', 'sys/mounts/node-local', { type: 'kv', local: true });
    const before = await roots();
    await n.call('PUT', 'node-local/k', { v: 'local only' });
    const after = await roots();
    expect(after.replicated).toBe(before.replicated);
    expect(after.local).not.toBe(before.local);
    expect((await n.call('GET', 'sys/mounts')).body.data['node-local/'].local).toBe(true);
  });

  it('serves KV v1 and v2 with Vault shapes through the router', async () => {
    await n.call('POST', 'sys/mounts/v1', { type: 'kv' });
    expect((await n.call('PUT', 'v1/app', { user: 'a', n: '3' })).status).toBe(204);
    expect((await n.call('GET', 'v1/app')).body.data).toEqual({ user: 'a', n: '3' });
    await n.call('POST', 'sys/mounts/v2', { type: 'kv', options: { version: '2' } });
    const w1 = await n.call('PUT', 'v2/data/app', { data: { a: 1 } });
    expect(w1.body.data.version).toBe(1);
    const cas = await n.call('PUT', 'v2/data/app', { data: { a: 2 }, options: { cas: 0 } });
    expect(cas.status).toBe(400);
    await n.call('PUT', 'v2/data/app', { data: { a: 2 }, options: { cas: 1 } });
    expect((await n.call('GET', 'v2/data/app?version=1')).body.data.data).toEqual({ a: 1 });
    expect((await n.call('GET', 'v2/metadata/app')).body.data.current_version).toBe(2);
    expect((await n.call('LIST', 'v2/metadata/')).body.data.keys).toEqual(['app']);
  });
});
