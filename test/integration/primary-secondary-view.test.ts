/**
 * What a primary's status (and the metrics read from it) says about its secondaries (issue 17):
 * a re-enabled primary (a new set) lists none of the old set's secondaries (item 11); a secondary
 * that is gone while behind shows a lag in time that grows from the oldest entry it lacks
 * (item 12). In-process nodes, real gRPC, real LevelDB.
 */
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, drStatus } from '../support/dr.js';
import { startTestNode } from '../support/in-process.js';

const metricLines = async (n: { call: (m: string, p: string) => Promise<{ text: string }> }, name: string): Promise<string[]> =>
  (await n.call('GET', 'sys/metrics?format=prometheus')).text.split('\n').filter((l) => l.startsWith(`${name}{`));

it('a primary disabled and enabled again (a new set) lists none of the old set\'s secondaries, in status or metrics (item 11)', async () => {
  const p = await startTestNode();
  const s = await startTestNode();
  await joinSecondary(p, s, 'old-east');
  await eventually(async () => expect((await drStatus(p)).secondaries.map((x: { node_id: string }) => x.node_id)).toEqual(['old-east']));
  const oldSet = (await drStatus(p)).cluster_id;

  expect((await p.call('POST', `${DR}/primary/disable`, {})).status).toBe(204);
  expect((await p.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
  const st = await drStatus(p);
  expect(st.mode).toBe('primary');
  expect(st.cluster_id).not.toBe(oldSet);
  expect(st.known_secondaries).toEqual([]);
  expect(st.secondaries).toEqual([]);
  expect(st.lag_entries).toBe(0);
  expect(await metricLines(p, 'tessera_replication_secondary_connected')).toEqual([]);
  expect(await metricLines(p, 'tessera_replication_secondary_lag_ms')).toEqual([]);

  // Nor after a restart on the same storage (the old set's last heartbeats are not kept either).
  await p.stop({ keepDir: true });
  const back = await startTestNode({ dir: p.dataDir, initialize: false });
  for (const key of p.unsealKeys.slice(0, 2)) await back.call('PUT', 'sys/unseal', { key }, { token: null });
  const after = await eventually(async () => {
    const x = await drStatus(back);
    expect(x.mode).toBe('primary');
    return x;
  });
  expect(after.secondaries).toEqual([]);
  await back.stop();
}, 60_000);

it('a secondary gone while behind shows lag_ms from the oldest entry it lacks, growing, in status and metrics (item 12)', async () => {
  const p = await startTestNode();
  const s = await startTestNode();
  await p.call('POST', 'sys/mounts/kv', { type: 'kv' });
  await joinSecondary(p, s, 'east');
  await eventually(async () => expect((await drStatus(p)).secondaries[0]).toMatchObject({ connection_status: 'connected', lag_entries: 0 }));
  await s.stop();
  const view = async () => (await drStatus(p)).secondaries.find((x: { node_id: string }) => x.node_id === 'east');
  await eventually(async () => expect((await view()).connection_status).toBe('disconnected'), { timeoutMs: 10_000 });

  const firstMissed = Date.now();
  expect((await p.call('PUT', 'kv/a', { v: 1 })).status).toBe(204);
  const one = await view();
  expect(one.lag_entries).toBeGreaterThan(0);
  // Counted from the commit of the first entry it lacks, not from its last heartbeat's figure.
  await eventually(async () => expect(Number((await view()).lag_ms)).toBeGreaterThanOrEqual(200), { timeoutMs: 5_000, intervalMs: 50 });
  const a = await view();
  expect(Number(a.lag_ms)).toBeLessThanOrEqual(Date.now() - firstMissed + 50);
  // A later write does not reset it: the oldest entry it lacks is still the first one.
  expect((await p.call('PUT', 'kv/b', { v: 2 })).status).toBe(204);
  const b = await view();
  expect(Number(b.lag_ms)).toBeGreaterThanOrEqual(Number(a.lag_ms));
  // The kind's lag is the largest of its secondaries'.
  expect(Number((await drStatus(p)).lag_ms)).toBeGreaterThanOrEqual(Number(b.lag_ms));
  const lagMetric = await metricLines(p, 'tessera_replication_secondary_lag_ms');
  expect(lagMetric).toHaveLength(1);
  expect(Number(lagMetric[0]?.slice(lagMetric[0].lastIndexOf(' ') + 1))).toBeGreaterThanOrEqual(200);
}, 60_000);

it('shows what the primary observed of a secondary in Vault\'s address fields, and what it reports as reported_* (item 19)', async () => {
  const p = await startTestNode();
  const s = await startTestNode();
  await joinSecondary(p, s, 'east');
  const seen = await eventually(async () => {
    const x = (await drStatus(p)).secondaries.find((v: { node_id: string }) => v.node_id === 'east');
    expect(x.connection_status).toBe('connected');
    return x;
  });
  // Observed: the peer address of its connection (an ephemeral port), never the port-0 listen
  // address it reports; no API address is observed at all.
  expect(seen.cluster_address).toMatch(/^https:\/\/127\.0\.0\.1:[1-9]\d*$/);
  expect(seen.api_address).toBe('');
  // Reported: what the secondary says about itself, marked as such.
  expect(seen.reported_cluster_address).toBe('https://127.0.0.1:0');
  expect(seen.reported_api_address).toBe(s.apiAddr);
}, 60_000);
