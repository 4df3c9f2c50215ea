/**
 * Performance paths filters end to end on in-process nodes (real LevelDB, HTTP and gRPC mTLS):
 * the spec 4.2 endpoints and their refusals, allow and deny filters applied to the stream and to
 * reconciliation, a namespace covering what is created under it later, a filter changed or
 * deleted on a running secondary (reconciled by Merkle diff, keys moved equal keys affected), and
 * the dynamic filter on both ends.
 */
import { jest } from '@jest/globals';
import { keyFilter, type PathsFilter } from '../../src/core/paths-filter.js';
import { loadFilterCatalog } from '../../src/vault/filter-catalog.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { drOperationToken, inSync, PERF, replStatus } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

jest.setTimeout(90_000);

const FILTER = `${PERF}/primary/paths-filter`;
const kv2 = { type: 'kv', options: { version: '2' } };

/** Mounts `secret/` (root), namespace `team-a` with `team-a/kv/`, and one secret in each. */
async function seed(p: TestNode): Promise<void> {
  expect((await p.call('POST', 'sys/mounts/secret', kv2)).status).toBe(204);
  expect((await p.call('POST', 'sys/namespaces/team-a')).status).toBe(200);
  expect((await p.call('POST', 'team-a/sys/mounts/kv', kv2)).status).toBe(204);
  expect((await p.call('PUT', 'secret/data/root-one', { data: { v: 1 } })).status).toBe(200);
  expect((await p.call('PUT', 'team-a/kv/data/a-one', { data: { v: 'a' } })).status).toBe(200);
  expect((await p.call('POST', 'sys/auth/up', { type: 'userpass' })).status).toBe(204);
}

/** The secondary's mount paths in one namespace ('' root), as sys/mounts lists them. */
/** Spec 4.2 / WIRE.md 8: a secondary without a filter reads as a 200 with an empty body. */
async function noFilter(p: TestNode, id: string): Promise<boolean> {
  const r = await p.call('GET', `${FILTER}/${id}`);
  expect({ status: r.status, text: r.text }).toEqual({ status: 200, text: '' });
  return true;
}

async function mountsOn(n: TestNode, ns = ''): Promise<string[]> {
  const r = await n.call('GET', `${ns}sys/mounts`);
  expect(r.status).toBe(200);
  return Object.keys(r.body.data).sort();
}

/**
 * Replicated keys of the primary whose verdict differs between two filters (undefined: none):
 * what a reconcile after that change must move. Counted over the primary's pinned Merkle leaves.
 */
async function keysAffected(p: TestNode, before: PathsFilter | undefined, after: PathsFilter | undefined): Promise<number> {
  const catalog = await loadFilterCatalog(p.node.core.store());
  const [a, b] = [keyFilter(before, catalog.mounts), keyFilter(after, catalog.mounts)];
  const snap = await p.node.engine.snapshot();
  try {
    let n = 0;
    for await (const l of snap.allLeaves(1)) if (a.keyAllowed(l.key) !== b.keyAllowed(l.key)) n++;
    return n;
  } finally {
    await snap.close();
  }
}

/**
 * Waits until the secondary is in sync again after a filter change; returns the counts of its last
 * reconcile. In sync means it applied the primary's last index, which a filtered stream never
 * passes (the filter's own entry) without a reconcile: so these counts are that reconcile's.
 */
async function reconciled(p: TestNode, s: TestNode): Promise<{ fetched_keys: number; deleted_keys: number }> {
  const st = await inSync(p, s, { kind: 'performance' });
  expect(st.last_merkle_sync).toBeDefined();
  return st.last_merkle_sync;
}

/** Rewrites the replicated mount or auth table of `n` in the older one-array layout. */
async function toLegacyLayout(n: TestNode, table: 'core/mounts' | 'core/auth'): Promise<void> {
  const store = n.node.core.store();
  const ids = (await store.list(`${table}/`)).filter((k) => !k.endsWith('/'));
  const entries = await Promise.all(ids.map(async (id) => JSON.parse((await store.get(`${table}/${id}`))!.toString('utf8'))));
  await store.commit([{ type: 'put', key: table, value: Buffer.from(JSON.stringify(entries)) }, ...ids.map((id) => ({ type: 'del' as const, key: `${table}/${id}` }))]);
}

describe('performance paths filters', () => {
  let p: TestNode;
  let s: TestNode;
  beforeEach(async () => {
    [p, s] = await Promise.all([startTestNode(), startTestNode()]);
    await seed(p);
  });
  afterEach(async () => {
    await Promise.all([p.stop(), s.stop()]);
  });

  test('bad input is a clear 4xx and changes nothing; only a performance primary has filters', async () => {
    // Not a performance primary yet: refused, naming the mode.
    const early = await p.call('POST', `${FILTER}/east`, { mode: 'deny', paths: ['team-a'] });
    expect(early.status).toBe(400);
    expect(early.body.errors[0]).toMatch(/not a performance primary \(performance mode: disabled\)/);
    await joinSecondary(p, s, 'east', 'performance');
    const refusals: [unknown, RegExp, string?][] = [
      [{ mode: 'deny', paths: ['team-a'] }, /no performance secondary "west" is known/, 'west'],
      [{ mode: 'maybe', paths: ['team-a'] }, /mode must be "allow" or "deny"/],
      [{ mode: 'deny', paths: ['no-such-mount'] }, /not a replicated mount or namespace: "no-such-mount\/"/],
      [{ mode: 'deny', paths: ['secret', '../x'] }, /segment/],
      [{ mode: 'deny', paths: 7 }, /paths/],
    ];
    for (const [body, why, id] of refusals) {
      const r = await p.call('POST', `${FILTER}/${id ?? 'east'}`, body);
      expect({ status: r.status, error: r.body.errors?.[0] }).toEqual({ status: 400, error: expect.stringMatching(why) });
    }
    // Nothing was stored: no filter to read (spec 4.2: a 200 with an empty body), and the secondary still holds everything.
    expect(await noFilter(p, 'east')).toBe(true);
    expect((await p.call('GET', `${FILTER}/west`)).status).toBe(400);
    expect((await s.call('GET', 'team-a/kv/data/a-one')).status).toBe(200);
    // A local mount cannot be named (it never reaches a performance secondary).
    expect((await p.call('POST', 'sys/mounts/here', { ...kv2, local: true })).status).toBe(204);
    expect((await p.call('POST', `${FILTER}/east`, { mode: 'deny', paths: ['here'] })).status).toBe(400);
    // The secondary has no filters of its own; the dynamic filter endpoints answer on the right end only.
    const onSecondary = await s.call('POST', `${FILTER}/east`, { mode: 'deny', paths: ['team-a'] });
    expect(onSecondary.status).toBe(400);
    expect(onSecondary.body.errors[0]).toMatch(/performance mode: secondary/);
    expect((await p.call('GET', `${PERF}/secondary/dynamic-filter/east`)).status).toBe(400);
    expect((await s.call('GET', `${PERF}/secondary/dynamic-filter/other`)).status).toBe(400);
    // No token, or a token without sudo: refused before anything is read.
    expect((await p.call('POST', `${FILTER}/east`, { mode: 'deny', paths: ['team-a'] }, { token: null })).status).toBe(403);
    expect(await noFilter(p, 'east')).toBe(true);
  });

  test('deny: a namespace covers its mounts and later children; change and delete reconcile by Merkle diff', async () => {
    await joinSecondary(p, s, 'east', 'performance');
    const deny: PathsFilter = { mode: 'deny', paths: ['team-a/', 'auth/up/'] };
    const affectedBySet = await keysAffected(p, undefined, deny);
    expect(affectedBySet).toBeGreaterThan(2);
    expect((await p.call('POST', `${FILTER}/east`, { mode: 'deny', paths: ['/team-a/', 'auth/up'] })).status).toBe(204);
    // Read back as written (trailing slashes kept), matched as normalised.
    expect((await p.call('GET', `${FILTER}/east`)).body.data).toEqual({ mode: 'deny', paths: ['/team-a/', 'auth/up'] });
    const sync1 = await reconciled(p, s);
    expect(sync1.fetched_keys + sync1.deleted_keys).toBe(affectedBySet);
    expect(sync1).toEqual({ fetched_keys: 0, deleted_keys: affectedBySet });
    // The filtered mount, auth method and namespace do not exist on the secondary.
    await eventually(async () => expect((await s.call('GET', 'team-a/kv/data/a-one')).status).toBe(404));
    expect((await s.call('GET', 'sys/namespaces/team-a')).status).toBe(404);
    expect(await mountsOn(s)).toContain('secret/');
    expect((await s.call('GET', 'sys/auth')).body.data['up/']).toBeUndefined();
    expect((await s.call('GET', 'secret/data/root-one')).body.data.data).toEqual({ v: 1 });

    // Created later under the namespace: a child namespace and its mount never reach the secondary.
    expect((await p.call('POST', 'team-a/sys/namespaces/child')).status).toBe(200);
    expect((await p.call('POST', 'team-a/child/sys/mounts/deep', kv2)).status).toBe(204);
    expect((await p.call('PUT', 'team-a/child/deep/data/x', { data: { v: 'deep' } })).status).toBe(200);
    expect((await p.call('PUT', 'secret/data/root-two', { data: { v: 2 } })).status).toBe(200);
    await inSync(p, s, { kind: 'performance' });
    await eventually(async () => expect((await s.call('GET', 'secret/data/root-two')).status).toBe(200));
    expect((await s.call('GET', 'team-a/child/deep/data/x')).status).toBe(404);
    // In storage: the secondary holds the data of exactly the mounts outside team-a/.
    const held: Record<string, boolean> = {};
    for (const m of (await loadFilterCatalog(p.node.core.store())).mounts.filter((x) => !x.local && !x.path.startsWith('auth/'))) {
      held[m.namespace + m.path] = (await s.node.core.store().list(`logical/${m.uuid}/`)).length > 0;
    }
    expect(held).toEqual({ 'secret/': true, 'team-a/kv/': false, 'team-a/child/deep/': false });
    // The dynamic filter, on the primary and as the secondary was told it.
    const dynamic = { dynamic_filtered_mounts: ['auth/up/', 'team-a/child/deep/', 'team-a/kv/'], dynamic_filtered_namespaces: ['team-a/', 'team-a/child/'] };
    expect((await p.call('GET', `${PERF}/primary/dynamic-filter/east`)).body.data).toEqual(dynamic);
    await eventually(async () => expect((await s.call('GET', `${PERF}/secondary/dynamic-filter/east`)).body.data).toEqual(dynamic));

    // Changed on the running secondary: team-a comes back, secret/ goes; keys moved = keys affected.
    const next: PathsFilter = { mode: 'deny', paths: ['secret/'] };
    const affectedByChange = await keysAffected(p, deny, next);
    expect((await p.call('POST', `${FILTER}/east`, { mode: 'deny', paths: ['secret'] })).status).toBe(204);
    const sync2 = await reconciled(p, s);
    expect(sync2.fetched_keys + sync2.deleted_keys).toBe(affectedByChange);
    expect(sync2.fetched_keys).toBeGreaterThan(0);
    expect(sync2.deleted_keys).toBeGreaterThan(0);
    await eventually(async () => expect((await s.call('GET', 'team-a/child/deep/data/x')).body?.data?.data).toEqual({ v: 'deep' }));
    expect((await s.call('GET', 'secret/data/root-one')).status).toBe(404);
    expect(await mountsOn(s)).not.toContain('secret/');
    expect((await s.call('GET', 'sys/auth')).body.data['up/']).toBeDefined();

    // Deleted: everything replicated arrives again, and the dynamic filter empties on both ends.
    const affectedByDelete = await keysAffected(p, next, undefined);
    expect((await p.call('DELETE', `${FILTER}/east`)).status).toBe(204);
    expect(await noFilter(p, 'east')).toBe(true);
    const sync3 = await reconciled(p, s);
    expect(sync3).toEqual({ fetched_keys: affectedByDelete, deleted_keys: 0 });
    await eventually(async () => expect((await s.call('GET', 'secret/data/root-two')).body?.data?.data).toEqual({ v: 2 }));
    const none = { dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] };
    expect((await p.call('GET', `${PERF}/primary/dynamic-filter/east`)).body.data).toEqual(none);
    await eventually(async () => expect((await s.call('GET', `${PERF}/secondary/dynamic-filter/east`)).body.data).toEqual(none));
  });

  test('performance enable moves legacy one-array mount and auth tables to one key per mount', async () => {
    await toLegacyLayout(p, 'core/mounts');
    await toLegacyLayout(p, 'core/auth');
    await p.node.core.reload();
    const store = p.node.core.store();
    expect(await store.get('core/mounts')).toBeDefined();
    expect((await p.call('GET', 'secret/data/root-one')).status).toBe(200);
    expect((await p.call('GET', 'sys/auth')).body.data['up/']).toBeDefined();
    expect((await p.call('POST', `${PERF}/primary/enable`, {})).status).toBe(204);
    expect(await store.get('core/mounts')).toBeUndefined();
    expect(await store.get('core/auth')).toBeUndefined();
    const catalog = await loadFilterCatalog(store);
    for (const m of catalog.mounts.filter((x) => !x.local)) {
      expect(await store.get(`${m.path.startsWith('auth/') ? 'core/auth' : 'core/mounts'}/${m.uuid}`)).toBeDefined();
    }
    expect(catalog.mounts.map((m) => m.namespace + m.path)).toEqual(expect.arrayContaining(['secret/', 'team-a/kv/', 'auth/up/']));
    expect((await p.call('GET', 'secret/data/root-one')).status).toBe(200);
  });

  test('allow: only the listed mounts and namespaces (with the namespaces containing them) reach the secondary', async () => {
    await joinSecondary(p, s, 'west', 'performance');
    expect((await p.call('POST', `${FILTER}/west`, { paths: ['team-a/kv/'] })).status).toBe(204);
    expect((await p.call('GET', `${FILTER}/west`)).body.data).toEqual({ mode: 'allow', paths: ['team-a/kv/'] });
    await reconciled(p, s);
    await eventually(async () => expect((await s.call('GET', 'secret/data/root-one')).status).toBe(404));
    expect((await s.call('GET', 'team-a/kv/data/a-one')).body.data.data).toEqual({ v: 'a' });
    expect(await mountsOn(s)).not.toContain('secret/');
    expect(await mountsOn(s, 'team-a/')).toContain('kv/');
    // A mount created later outside the allowed paths stays on the primary.
    expect((await p.call('POST', 'team-a/sys/mounts/other', kv2)).status).toBe(204);
    expect((await p.call('PUT', 'team-a/other/data/o', { data: { v: 1 } })).status).toBe(200);
    expect((await p.call('PUT', 'team-a/kv/data/a-two', { data: { v: 2 } })).status).toBe(200);
    await inSync(p, s, { kind: 'performance' });
    await eventually(async () => expect((await s.call('GET', 'team-a/kv/data/a-two')).status).toBe(200));
    expect((await s.call('GET', 'team-a/other/data/o')).status).toBe(404);
    expect(await mountsOn(s, 'team-a/')).not.toContain('other/');
    const dyn = (await p.call('GET', `${PERF}/primary/dynamic-filter/west`)).body.data;
    expect(dyn).toEqual({ dynamic_filtered_mounts: ['auth/up/', 'secret/', 'team-a/other/'], dynamic_filtered_namespaces: [] });
    await eventually(async () => expect((await s.call('GET', `${PERF}/secondary/dynamic-filter/west`)).body.data).toEqual(dyn));
  });
});

describe('performance paths filters across a DR failover of the primary', () => {
  test('the promoted DR secondary serves the same filter to the performance secondary that follows it', async () => {
    const [p, d, s] = await Promise.all([startTestNode(), startTestNode(), startTestNode()]);
    try {
      await seed(p);
      await joinSecondary(p, d, 'dr-1', 'dr');
      await joinSecondary(p, s, 'east', 'performance');
      expect((await p.call('POST', `${FILTER}/east`, { mode: 'deny', paths: ['team-a'] })).status).toBe(204);
      await reconciled(p, s);
      await inSync(p, d, { kind: 'dr' });
      await eventually(async () => expect((await s.call('GET', 'team-a/kv/data/a-one')).status).toBe(404));
      // The primary is lost; its DR secondary takes over, holding the performance role and filters.
      const op = await drOperationToken(d, p.unsealKeys.slice(0, 2));
      await p.stop();
      expect((await d.call('POST', 'sys/replication/dr/secondary/promote', { dr_operation_token: op }, { token: null })).status).toBe(204);
      const dp = await eventually(async () => {
        const st = await replStatus(d, 'performance');
        expect(st.mode).toBe('primary');
        return st;
      });
      expect(dp.known_secondaries).toEqual(['east']);
      expect((await d.call('GET', `${FILTER}/east`, undefined, { token: p.rootToken })).body.data).toEqual({ mode: 'deny', paths: ['team-a'] });
      // The performance secondary follows the new primary by address, no new token; the filter holds.
      expect((await s.call('POST', `${PERF}/secondary/update-primary`, { update_primary_addrs: [dp.primary_cluster_addr] })).status).toBe(204);
      expect((await d.call('PUT', 'secret/data/after', { data: { v: 'after' } }, { token: p.rootToken })).status).toBe(200);
      expect((await d.call('PUT', 'team-a/kv/data/after', { data: { v: 'hidden' } }, { token: p.rootToken })).status).toBe(200);
      await inSync(d, s, { kind: 'performance' });
      await eventually(async () => expect((await s.call('GET', 'secret/data/after')).body?.data?.data).toEqual({ v: 'after' }));
      expect((await s.call('GET', 'team-a/kv/data/after')).status).toBe(404);
      expect((await s.call('GET', 'sys/namespaces/team-a')).status).toBe(404);
      expect((await d.call('GET', `${PERF}/primary/dynamic-filter/east`, undefined, { token: p.rootToken })).body.data).toEqual({ dynamic_filtered_mounts: ['team-a/kv/'], dynamic_filtered_namespaces: ['team-a/'] });
    } finally {
      await Promise.all([p.stop().catch(() => undefined), d.stop(), s.stop()]);
    }
  });
});
