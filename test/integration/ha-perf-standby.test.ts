/**
 * Issue 28 item 3: performance standbys. An HA standby answers reads itself from the shared
 * database (its own audit file records them; the active node's does not), with consistency no
 * worse than the active node's: a write acknowledged by any node is read at once through the
 * standby, a revoked token is refused at once, a policy or mount change is in force at once; a
 * read that turns out to write (a token's counted use, a wrapped answer) is relayed whole; writes
 * are relayed as before. Two in-process nodes on one private PostgreSQL with `ha_enabled`, each
 * with its own audit directory and one file audit device enabled through the active node. While
 * the standby holds a read lease from the active node it answers without reading the database at
 * all, and takes each write the active node acknowledged from the push that told it (the batch's
 * WAL entries), before the active node answers (src/core/ha/read-lease.ts).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../harness/eventually.js';
import { startHaCluster, type HaCluster, type InProcessHaNode } from '../harness/ha.js';
import { useHarness } from '../harness/harness.js';
import { usePostgres } from '../support/postgres.js';

type TestNode = InProcessHaNode;

const h = useHarness();
const postgres = usePostgres();

let c: HaCluster<TestNode>;
let dirs: string[] = [];

beforeAll(async () => {
  dirs = [await mkdtemp(join(tmpdir(), 'perf-standby-a-')), await mkdtemp(join(tmpdir(), 'perf-standby-b-'))];
  // In-process nodes share jest's event loop: a longer lease than the default rides out its stalls.
  c = await startHaCluster(h, { inProcess: true, nodes: 2, postgres: postgres(), database: 'ha_perf_standby', leaseTtlMs: 5000, mountKv2: true, node: (i) => ({ auditDir: dirs[i]! }) });
  const { active } = await roles();
  expect((await active.call('PUT', 'sys/audit/file', { type: 'file', options: { file_path: 'audit.log' } })).status).toBe(204);
  expect((await active.call('POST', 'secret/data/warm', { data: { v: 0 } })).status).toBe(200);
}, 60_000);

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** The active node and the standby. */
async function roles(): Promise<{ active: TestNode; standby: TestNode }> {
  const active = await c.active();
  return { active, standby: c.nodes.find((n) => n !== active)! };
}

/** The audit file's response entries for `path` (namespace-relative) on one node. */
async function answered(node: TestNode, path: string, operation: string): Promise<number> {
  const text = await readFile(join(dirs[node.index]!, 'audit.log'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { type: string; request?: { path?: string; operation?: string } })
    .filter((e) => e.type === 'response' && e.request?.path === path && e.request?.operation === operation).length;
}

/** A standby that became able to serve reads (its replication state read): it answers this read itself. */
async function servedHere(standby: TestNode, path: string): Promise<void> {
  await eventually(
    async () => {
      const before = await answered(standby, path, 'read');
      expect((await standby.call('GET', path)).status).toBe(200);
      expect(await answered(standby, path, 'read')).toBe(before + 1);
    },
    { timeoutMs: 10_000 },
  );
}

/** One unlabelled sample of a node's own metrics (sys/metrics is answered locally by a standby). */
async function metric(n: TestNode, name: string): Promise<number> {
  const r = await n.call('GET', 'sys/metrics?format=prometheus');
  expect(r.status).toBe(200);
  const line = r.text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`${name} has no sample`);
  return Number(line.split(' ')[1]);
}

describe('a performance standby answers reads itself, as current as the active node', () => {
  it('answers from its read lease without reading the database, and takes each write the active node acknowledged from its push', async () => {
    const { active, standby } = await roles();
    await servedHere(standby, 'secret/data/warm');
    // The standby holds a lease from the active node, and the active node counts it.
    await eventually(async () => {
      expect(await metric(standby, 'tessera_ha_read_lease_seconds')).toBeGreaterThan(0);
      expect(await metric(active, 'tessera_ha_read_leases')).toBe(1);
    });
    expect((await active.call('POST', 'secret/data/leased', { data: { v: 0 } })).status).toBe(200);
    expect((await standby.call('GET', 'secret/data/leased')).status).toBe(200);
    // Reads with no write between them: none reads the database (the lease renews meanwhile).
    // A lapse of the lease (a stall of the shared event loop) may add a follow; 50 reads would make 50.
    const quiet = await metric(standby, 'tessera_ha_standby_follows_total');
    for (let i = 0; i < 50; i++) expect((await standby.call('GET', 'secret/data/leased')).status).toBe(200);
    expect((await metric(standby, 'tessera_ha_standby_follows_total')) - quiet).toBeLessThan(10);
    // Each acknowledged write was pushed to the standby, with its WAL entries, before its answer:
    // the next read sees it, and the standby took the entries as they came (no follow for most).
    const before = await metric(standby, 'tessera_ha_standby_follows_total');
    for (let i = 1; i <= 20; i++) {
      expect((await active.call('POST', 'secret/data/leased', { data: { v: i } })).status).toBe(200);
      const r = await standby.call('GET', 'secret/data/leased');
      expect({ i, v: r.body?.data?.data?.v }).toEqual({ i, v: i });
    }
    expect((await metric(standby, 'tessera_ha_standby_follows_total')) - before).toBeLessThan(10);
  });

  it('reads a write the active node acknowledged at once, and a write relayed through itself at once, answering both itself', async () => {
    const { active, standby } = await roles();
    await servedHere(standby, 'secret/data/warm');
    const activeReads = await answered(active, 'secret/data/a', 'read');
    for (let i = 1; i <= 20; i++) {
      expect((await active.call('POST', 'secret/data/a', { data: { v: i } })).status).toBe(200);
      const r = await standby.call('GET', 'secret/data/a');
      expect({ i, status: r.status, v: r.body?.data?.data?.v }).toEqual({ i, status: 200, v: i });
      // Written through the standby (relayed), read back through it at once.
      expect((await standby.call('POST', 'secret/data/b', { data: { v: i } })).status).toBe(200);
      const b = await standby.call('GET', 'secret/data/b');
      expect({ i, v: b.body?.data?.data?.v }).toEqual({ i, v: i });
    }
    expect(await answered(standby, 'secret/data/a', 'read')).toBeGreaterThanOrEqual(20);
    // The active node ran the relayed writes, and none of the reads.
    expect(await answered(active, 'secret/data/a', 'read')).toBe(activeReads);
    expect(await answered(active, 'secret/data/b', 'create') + (await answered(active, 'secret/data/b', 'update'))).toBeGreaterThanOrEqual(20);
    const list = await standby.call('LIST', 'secret/metadata/');
    expect(list.status).toBe(200);
    expect(list.body.data.keys).toEqual(expect.arrayContaining(['a', 'b', 'warm']));
    // A deleted secret is gone through the standby at once.
    expect((await active.call('DELETE', 'secret/metadata/a')).status).toBe(204);
    expect((await standby.call('GET', 'secret/data/a')).status).toBe(404);
  });

  it('refuses a token the active node revoked, and holds a policy or mount change, at once', async () => {
    const { active, standby } = await roles();
    expect((await active.call('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/data/p" { capabilities = ["read"] }' })).status).toBe(204);
    expect((await active.call('POST', 'secret/data/p', { data: { v: 'p' } })).status).toBe(200);
    const created = await active.call('POST', 'auth/token/create', { policies: ['reader'] });
    const token = String(created.body.auth.client_token);
    await servedHere(standby, 'secret/data/warm');
    expect((await standby.call('GET', 'secret/data/p', undefined, { token })).status).toBe(200);
    const lookup = await standby.call('POST', 'auth/token/lookup', { token });
    expect(lookup.body.data.policies).toEqual(['default', 'reader']);

    expect((await active.call('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/data/other" { capabilities = ["read"] }' })).status).toBe(204);
    expect((await standby.call('GET', 'secret/data/p', undefined, { token })).status).toBe(403);
    expect((await active.call('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/data/p" { capabilities = ["read"] }' })).status).toBe(204);
    expect((await standby.call('GET', 'secret/data/p', undefined, { token })).status).toBe(200);

    expect((await active.call('POST', 'auth/token/revoke', { token })).status).toBe(204);
    expect((await standby.call('GET', 'secret/data/p', undefined, { token })).status).toBe(403);
    expect((await standby.call('POST', 'auth/token/lookup', { token })).status).toBe(403);

    expect((await active.call('POST', 'sys/mounts/fresh', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await standby.call('POST', 'fresh/data/x', { data: { v: 1 } })).status).toBe(200);
    expect((await standby.call('GET', 'fresh/data/x')).body.data.data).toEqual({ v: 1 });
    expect((await active.call('DELETE', 'sys/mounts/fresh')).status).toBe(204);
    expect((await standby.call('GET', 'fresh/data/x')).status).toBe(404);
  });

  it('holds the namespace boundary on what it answers itself: a namespace token gets what the active node gives it', async () => {
    const { active, standby } = await roles();
    expect((await active.call('POST', 'sys/namespaces/tenant')).status).toBeLessThan(300);
    const ns = { 'X-Vault-Namespace': 'tenant' };
    const created = await active.call('POST', 'auth/token/create', { policies: ['default'] }, { headers: ns });
    expect(created.status).toBe(200);
    const token = String(created.body.auth.client_token);
    await servedHere(standby, 'secret/data/warm');
    for (const [method, path, body] of [
      ['GET', 'secret/data/warm', undefined],
      ['LIST', 'secret/metadata/', undefined],
      ['POST', 'auth/token/lookup', { token: active.rootToken }],
      ['GET', 'sys/mounts', undefined],
    ] as const) {
      const there = await active.call(method, path, body, { token });
      const here = await standby.call(method, path, body, { token });
      expect({ path, status: here.status }).toEqual({ path, status: there.status });
      expect({ path, status: here.status }).toEqual({ path, status: 403 });
    }
  });

  it('relays a read that turns out to write: a counted token use is spent once per request, a wrapped answer is stored', async () => {
    const { active, standby } = await roles();
    expect((await active.call('PUT', 'sys/policies/acl/counted', { policy: 'path "secret/data/c" { capabilities = ["read"] }' })).status).toBe(204);
    expect((await active.call('POST', 'secret/data/c', { data: { v: 'c' } })).status).toBe(200);
    const created = await active.call('POST', 'auth/token/create', { policies: ['counted'], num_uses: 2 });
    const token = String(created.body.auth.client_token);
    await servedHere(standby, 'secret/data/warm');
    for (const use of [1, 2]) {
      const r = await standby.call('GET', 'secret/data/c', undefined, { token });
      expect({ use, status: r.status, data: r.body?.data?.data ?? r.body }).toEqual({ use, status: 200, data: { v: 'c' } });
    }
    // Both uses spent: the token is gone everywhere.
    expect((await standby.call('GET', 'secret/data/c', undefined, { token })).status).toBe(403);
    expect((await active.call('GET', 'secret/data/c', undefined, { token })).status).toBe(403);

    const wrapped = await standby.call('GET', 'secret/data/c', undefined, { headers: { 'X-Vault-Wrap-TTL': '60s' } });
    expect(wrapped.status).toBe(200);
    const wrapToken = String(wrapped.body.wrap_info.token);
    const unwrapped = await active.call('POST', 'sys/wrapping/unwrap', undefined, { token: wrapToken });
    expect(unwrapped.status).toBe(200);
    expect(unwrapped.body.data.data).toEqual({ v: 'c' });
  });

  it('answers sys/* reads itself and relays a node route\'s read (state the active node holds in memory)', async () => {
    const { active, standby } = await roles();
    await servedHere(standby, 'secret/data/warm');
    const mounts = await standby.call('GET', 'sys/mounts');
    expect(mounts.status).toBe(200);
    expect(Object.keys(mounts.body.data)).toEqual(expect.arrayContaining(['secret/', 'sys/']));
    const before = await answered(standby, 'sys/mounts', 'read');
    expect((await standby.call('GET', 'sys/mounts')).status).toBe(200);
    expect(await answered(standby, 'sys/mounts', 'read')).toBe(before + 1);
    // Vault's health and leader answers for a performance standby (by default every standby is one).
    const health = await standby.call('GET', 'sys/health', undefined, { token: null });
    expect(health.status).toBe(473);
    expect(health.body).toMatchObject({ standby: true, performance_standby: true });
    expect((await standby.call('GET', 'sys/health?perfstandbyok=true', undefined, { token: null })).status).toBe(200);
    expect((await standby.call('GET', 'sys/leader', undefined, { token: null })).body).toMatchObject({ is_self: false, performance_standby: true });
    expect((await active.call('GET', 'sys/health', undefined, { token: null })).body.performance_standby).toBe(false);
    // A node route's read (rekey progress lives in the active node's memory) is relayed: the
    // active node audits it, the standby does not.
    const onActive = await answered(active, 'sys/rekey/init', 'read');
    const onStandby = await answered(standby, 'sys/rekey/init', 'read');
    const rekey = await standby.call('GET', 'sys/rekey/init');
    expect(rekey.status).toBe(200);
    expect(rekey.body.started).toBe(false);
    expect(await answered(active, 'sys/rekey/init', 'read')).toBe(onActive + 1);
    expect(await answered(standby, 'sys/rekey/init', 'read')).toBe(onStandby);
  });
});
