/**
 * Replication follows the active node (issue 19 item 5), on real HA clusters in process: a
 * primary cluster of two nodes on one PostgreSQL with a DR and a performance secondary, and a DR
 * secondary cluster of two nodes on another database. After the primary cluster's active node
 * steps down, both secondaries stream from the new one within 10 s with no Merkle diff or sync;
 * after the secondary cluster's active node steps down, its new active node resumes from the
 * applied index (no Merkle sync) and receives new writes.
 */
import { jest } from '@jest/globals';
import { joinSecondary } from '../harness/cluster.js';
import { eventually } from '../harness/eventually.js';
import { startHaCluster, type HaCluster, type InProcessHaNode } from '../harness/ha.js';
import { useHarness } from '../harness/harness.js';
import { inSync, replStatus, type Kind } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { usePostgres } from '../support/postgres.js';

jest.setTimeout(120_000);

const h = useHarness();
const postgres = usePostgres();

const nodes: TestNode[] = [];
afterEach(async () => {
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

let current: HaCluster<InProcessHaNode> | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});

/** Two HA nodes on database `db` (test/harness/ha.ts): the first initialised and unsealed, so active; the second unsealed unless `sealed`. */
async function pair(db: string, sealed = false): Promise<[TestNode, TestNode]> {
  // A 5 s lease: both nodes and jest share one event loop here, and a stall of the 2 s default
  // under a loaded CI machine can fail the new node's activation (it then backs off while the old
  // one, polite in its cooldown, takes the free row back). Hand-overs do not wait for the lease.
  current = await startHaCluster(h, { inProcess: true, nodes: 2, leaseTtlMs: 5_000, postgres: postgres(), database: db, unseal: sealed ? 'first' : 'all' });
  const a = await current.active({ agreed: !sealed });
  return [a, current.nodes.find((n) => n !== a)!];
}

async function unseal(n: TestNode, keys: readonly string[], rootToken: string): Promise<void> {
  for (const key of keys.slice(0, 2)) expect((await n.call('PUT', 'sys/unseal', { key }, { token: null })).status).toBe(200);
  n.rootToken = rootToken;
  n.unsealKeys = [...keys];
}

async function isActive(n: TestNode): Promise<boolean> {
  return (await n.call('GET', 'sys/leader', undefined, { token: null })).body.is_self === true;
}

async function waitActive(n: TestNode): Promise<void> {
  await eventually(async () => expect(await isActive(n)).toBe(true), { timeoutMs: 15_000 });
}

function merkleEvents(n: TestNode, kind: Kind): number {
  return n.node.events.history().filter((e) => e.kind === kind && e.type.startsWith('merkle-')).length;
}

describe('replication follows the active node', () => {
  it('a primary cluster fails over: its DR and performance secondaries stream from the new active node without a Merkle sync', async () => {
    const [a, b] = await pair('ha_primary');
    const dr = await startTestNode();
    const perf = await startTestNode();
    nodes.push(dr, perf);
    expect((await a.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    await joinSecondary(a, dr, 'dr-east', 'dr');
    await joinSecondary(a, perf, 'perf-east', 'performance');
    expect((await a.call('PUT', 'secret/data/before', { data: { v: 0 } })).status).toBe(200);
    const secondaries: [TestNode, Kind][] = [[dr, 'dr'], [perf, 'performance']];
    // Both learn both nodes of the primary cluster from its replies.
    for (const [n, kind] of secondaries) {
      await eventually(async () => expect((await inSync(a, n, { kind, streaming: true })).known_primary_cluster_addrs).toHaveLength(2), { timeoutMs: 15_000 });
    }
    const merkleBefore = secondaries.map(([n, kind]) => merkleEvents(n, kind));

    const at = Date.now();
    expect((await a.call('PUT', 'sys/step-down', {})).status).toBe(204);
    await waitActive(b);
    expect((await b.call('PUT', 'secret/data/after', { data: { v: 1 } })).status).toBe(200);
    await eventually(async () => {
      for (const [n, kind] of secondaries) await inSync(b, n, { kind, streaming: true });
      expect((await perf.call('GET', 'secret/data/after')).body?.data?.data).toEqual({ v: 1 });
    }, { timeoutMs: Math.max(1, 10_000 - (Date.now() - at)) });
    expect(secondaries.map(([n, kind]) => merkleEvents(n, kind))).toEqual(merkleBefore);
    // A performance secondary's forwarded write reaches the new active node.
    expect((await perf.call('PUT', 'secret/data/forwarded', { data: { via: 'b' } })).status).toBe(200);
    expect((await b.call('GET', 'secret/data/forwarded')).body.data.data).toEqual({ via: 'b' });
    // Through the standby (the old active node) too: relayed to the new one.
    const relayed = await a.call('GET', 'secret/data/forwarded');
    expect({ status: relayed.status, body: relayed.body?.data?.data ?? relayed.body }).toEqual({ status: 200, body: { via: 'b' } });
  });

  it('a DR secondary cluster fails over: its new active node resumes from the applied index', async () => {
    const p = await startTestNode();
    nodes.push(p);
    expect((await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    for (let i = 0; i < 5; i++) await p.call('PUT', `secret/data/k${i}`, { data: { i } });
    const [s1, s2] = await pair('ha_dr_secondary', true);
    await waitActive(s1);
    await joinSecondary(p, s1, 'dr-ha', 'dr');
    // After activation the secondary cluster is sealed by the primary's keys: its standby unseals with them.
    await unseal(s2, p.unsealKeys, p.rootToken);
    const applied = (await inSync(p, s1, { kind: 'dr', streaming: true })).last_remote_wal;
    // The standby names the active node (it confirmed itself over the cluster port).
    await eventually(async () => expect((await s2.call('GET', 'sys/leader', undefined, { token: null })).body).toMatchObject({ is_self: false, leader_address: s1.apiAddr }), { timeoutMs: 10_000 });
    // The active node of the secondary cluster goes away (as on SIGTERM).
    await s1.stop();
    await waitActive(s2);
    expect((await p.call('PUT', 'secret/data/after', { data: { v: 1 } })).status).toBe(200);
    const st = await eventually(async () => inSync(p, s2, { kind: 'dr', streaming: true }), { timeoutMs: 15_000 });
    expect(Number(st.last_remote_wal)).toBeGreaterThan(Number(applied));
    // Resumed from its applied guard: the new active node ran no Merkle diff or sync.
    expect(merkleEvents(s2, 'dr')).toBe(0);
    expect((await replStatus(s2, 'dr')).state).toBe('stream-wals');
  });
});
