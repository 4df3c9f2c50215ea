/**
 * A planned switchover on real processes loses nothing (issue 6 item 11): eight writers keep
 * writing while the primary is demoted; the demote drains (writes stop with a clear 503, the
 * connected secondary applies the final index and confirms it), then the secondary is promoted
 * without force, and every write the old primary acknowledged reads back from the new one.
 */
import {
  DR, drOperationToken, drStatus, eventually, lastAcked, startCluster, startWriter, useHarness, vault,
} from '../harness/index.js';

const h = useHarness();

test('demote drains to the secondary; promote without force; every acknowledged write is on the new primary', async () => {
  const cluster = await startCluster(h, { mountKv2: true, dr: ['dr-east'] });
  const old = cluster.primary;
  const s = cluster.dr[0]!;
  const keys = old.unsealKeys;
  const root = old.rootToken;
  const opToken = await drOperationToken(s.apiAddr, keys.slice(0, 2));

  const writer = startWriter({ apiAddr: old.apiAddr, token: root, clients: 8, path: (c, n) => `secret/data/c${c}/k${n}` });
  try {
    await eventually(() => expect(writer.acked.length).toBeGreaterThan(300), { timeoutMs: 30_000, intervalMs: 20 });
    // Demote while eight clients are mid-request.
    const demote = await vault(old.apiAddr, root).post(`${DR}/primary/demote`, {});
    expect(demote.status).toBe(200);
    expect(demote.body.data).toMatchObject({ confirmed: ['dr-east'], unconfirmed: [], timed_out: false });
    const finalWal = demote.body.data.last_wal as number;

    // After the demote the old node takes no writes: refused, never acknowledged.
    const late = await vault(old.apiAddr, root).put('secret/data/too-late', { data: { value: 'x' } });
    expect(late.status).toBeGreaterThanOrEqual(400);
  } finally {
    await writer.stop();
  }
  const acked = writer.acked;
  expect(acked.length).toBeGreaterThan(300);

  // The secondary applied the final index and knows it: promote needs no force.
  const st = await drStatus(s.apiAddr);
  expect(st.lag_entries).toBe(0);
  const promote = await vault(s.apiAddr).post(`${DR}/secondary/promote`, { dr_operation_token: opToken });
  expect({ status: promote.status, body: promote.body }).toEqual({ status: 204, body: promote.body });
  expect((await drStatus(s.apiAddr)).mode).toBe('primary');

  const v = vault(s.apiAddr, root);
  const missing: string[] = [];
  for (const [path, value] of lastAcked(acked)) {
    const r = await v.get(path);
    if (r.status !== 200 || r.body?.data?.data?.value !== value) missing.push(`${path}=${value} (${r.status})`);
  }
  expect({ acknowledged: acked.length, missing }).toEqual({ acknowledged: acked.length, missing: [] });
}, 120_000);
