/**
 * The primary's view of its secondaries follows the open stream (issue 7 item 1): connected with
 * a heartbeat the moment a secondary streams, disconnected the moment it leaves (blank-token
 * update-primary, promotion), and the last heartbeat (on the primary, with the applied index each
 * secondary last reported) survives a restart of either end. In-process
 * nodes with real gRPC; the secondary's side on the loopback channel with a partition.
 */
import pino from 'pino';
import { PrimaryStreamer } from '../../src/replication/primary-service.js';
import { SecondaryLoop } from '../../src/replication/secondary-loop.js';
import type { LastSeen, LastSeenStore } from '../../src/replication/secondary-views.js';
import { StorageEngine } from '../../src/storage/engine.js';
import { MemoryBackend } from '../../src/storage/memory.js';
import { eventually } from '../harness/eventually.js';
import { DR, drOperationToken, drStatus, secondaryToken } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { loopback } from '../support/loopback.js';

const nodes: TestNode[] = [];
afterEach(async () => {
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

async function node(dir?: string): Promise<TestNode> {
  const n = await startTestNode(dir ? { dir, initialize: false } : {});
  nodes.push(n);
  return n;
}

const view = (st: any, id: string): any => st.secondaries.find((x: any) => x.node_id === id);

it('shows a secondary connected as soon as it streams, disconnected as soon as it leaves, and keeps last_heartbeat across a restart', async () => {
  const p = await node();
  await p.call('POST', 'sys/mounts/kv', { type: 'kv' });
  expect((await p.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
  const [s1, s2] = [await node(), await node()];
  for (const [s, id] of [[s1, 's1'], [s2, 's2']] as const) {
    expect((await s.call('POST', `${DR}/secondary/enable`, { token: await secondaryToken(p, id) })).status).toBe(204);
    // The moment the secondary says stream-wals, the primary says connected, with a heartbeat.
    await eventually(async () => expect((await drStatus(s)).state).toBe('stream-wals'), { timeoutMs: 15_000, intervalMs: 5 });
    const seen = view(await drStatus(p), id);
    expect(seen).toMatchObject({ connection_status: 'connected', state: 'stream-wals' });
    expect(seen.last_heartbeat).not.toBe('');
  }
  await p.call('PUT', 'kv/x', { v: 1 });
  // Both have applied it, and said so in a heartbeat.
  const appliedAll = async (ids: string[]) => {
    const st = await drStatus(p);
    for (const id of ids) expect(view(st, id).last_applied_wal).toBe(st.last_wal);
  };
  await eventually(() => appliedAll(['s1', 's2']), { timeoutMs: 10_000, intervalMs: 20 });
  const allApplied = Date.now();

  // Blank-token update-primary: the stream ends, and the primary says so well under 5 s.
  const op1 = await drOperationToken(s1, p.unsealKeys.slice(0, 2));
  expect((await s1.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: op1, token: '' }, { token: null })).status).toBe(200);
  const t1 = Date.now();
  await eventually(async () => expect(view(await drStatus(p), 's1')).toMatchObject({ connection_status: 'disconnected', state: 'idle' }), { timeoutMs: 1_500, intervalMs: 20 });
  expect(Date.now() - t1).toBeLessThan(1_500);
  expect(view(await drStatus(p), 's2').connection_status).toBe('connected');
  // A write s1 will not have: its lag after the restart must still count from what it applied.
  await p.call('PUT', 'kv/y', { v: 2 });

  // Promotion: the same.
  await eventually(async () => expect((await drStatus(s2)).last_wal).toBe((await drStatus(p)).last_wal), { timeoutMs: 10_000, intervalMs: 20 });
  const op2 = await drOperationToken(s2, p.unsealKeys.slice(0, 2));
  expect((await s2.call('POST', `${DR}/secondary/promote`, { dr_operation_token: op2 }, { token: null })).status).toBe(204);
  await eventually(async () => expect(view(await drStatus(p), 's2')).toMatchObject({ connection_status: 'disconnected', state: 'idle' }), { timeoutMs: 1_500, intervalMs: 20 });
  const before = await drStatus(p);

  // Restart the primary: the last heartbeats it saw are still reported.
  const dir = p.dataDir;
  nodes.splice(nodes.indexOf(p), 1);
  await p.stop({ keepDir: true });
  const back = await node(dir);
  for (const key of p.unsealKeys.slice(0, 2)) await back.call('PUT', 'sys/unseal', { key }, { token: null });
  const after = await eventually(async () => {
    const st = await drStatus(back);
    expect(st.mode).toBe('primary');
    return st;
  });
  for (const id of ['s1', 's2']) {
    expect(view(after, id)).toMatchObject({ connection_status: 'disconnected', state: 'idle', last_heartbeat: view(before, id).last_heartbeat });
    expect(view(after, id).last_heartbeat).not.toBe('');
    // And the applied index each last reported: its lag is counted from there, not from nothing.
    const applied = view(before, id).last_applied_wal;
    expect(applied).toBeGreaterThan(0);
    expect(view(after, id)).toMatchObject({ last_applied_wal: applied, lag_entries: after.last_wal - applied });
  }
  // s1 lacks at least kv/y, and not the whole WAL (what the status said before the record held it).
  expect(view(after, 's1').lag_entries).toBeGreaterThan(0);
  expect(view(after, 's1').lag_entries).toBeLessThan(after.last_wal);
  // Its lag in time runs from the commit of the first entry it lacks, made after allApplied.
  const lagMs = Number(view(after, 's1').lag_ms);
  expect(lagMs).toBeGreaterThan(0);
  expect(lagMs).toBeLessThanOrEqual(Date.now() - allApplied);
}, 60_000);

it('a secondary keeps the last heartbeat with its primary across a restart, while the primary is unreachable', async () => {
  const open = () => StorageEngine.open(new MemoryBackend(), { walMaxEntries: 100, walMaxBytes: 1 << 20 });
  const [pe, se] = [await open(), await open()];
  const service = new PrimaryStreamer({
    engine: pe, kind: 'dr', registry: { check: () => 'active' },
    info: { clusterId: () => 'c', nodeId: () => 'p', apiAddr: () => '', clusterAddr: () => '' },
  });
  let saved: Record<string, LastSeen> = {};
  const lastSeen: LastSeenStore = { load: async () => ({ ...saved }), save: async (m) => void (saved = { ...m }) };
  const link = loopback(service, 's1');
  const make = () => new SecondaryLoop({ engine: se, connect: link.client, secondaryId: 's1', kind: 'dr', apiAddr: () => '', clusterAddr: () => '', log: pino({ level: 'silent' }), lastSeen, heartbeatMs: 50 });
  let loop = make();
  loop.start();
  await eventually(() => expect(loop.progress.lastHeartbeatMs).toBeGreaterThan(0), { timeoutMs: 5_000, intervalMs: 10 });
  await loop.stop();
  const last = loop.progress.lastHeartbeatMs;
  expect(saved['primary']).toEqual({ ms: last });

  link.partition(true);
  loop = make();
  loop.start();
  await eventually(() => expect(loop.progress.lastHeartbeatMs).toBe(last), { timeoutMs: 2_000, intervalMs: 10 });
  await loop.stop();
  await service.close();
});
