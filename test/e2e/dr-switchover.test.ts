/**
 * A planned switchover on real processes loses nothing, for both kinds (issue 6 item 11, issue
 * 17 item 2): eight writers keep writing while the primary is demoted; the demote drains (writes
 * stop with a clear 503, the connected secondary applies the final index and confirms it), then
 * the secondary is promoted without force, and every write the old primary acknowledged reads
 * back from the new one. The performance demote once lifted its fence before its role record was
 * written, and acknowledged writes in that window that never reached the secondary.
 */
import {
  DR, PERF, drOperationToken, eventually, lastAcked, replStatus, startCluster, startWriter, useHarness, vault,
  type Kind,
} from '../harness/index.js';

const h = useHarness();

describe.each<[Kind, string]>([['dr', DR], ['performance', PERF]])('%s', (kind, base) => {
  test('demote drains to the secondary; promote without force; every acknowledged write is on the new primary', async () => {
    const cluster = await startCluster(h, { mountKv2: true, ...(kind === 'dr' ? { dr: ['sw-east'] } : { performance: ['sw-east'] }) });
    const old = cluster.primary;
    const s = kind === 'dr' ? cluster.dr[0]! : cluster.performance[0]!;
    const root = old.rootToken;
    const opToken = kind === 'dr' ? await drOperationToken(s.apiAddr, old.unsealKeys.slice(0, 2)) : undefined;

    const writer = startWriter({ apiAddr: old.apiAddr, token: root, clients: 8, path: (c, n) => `secret/data/c${c}/k${n}` });
    let finalWal: number;
    try {
      await eventually(() => expect(writer.acked.length).toBeGreaterThan(300), { timeoutMs: 30_000, intervalMs: 20 });
      // Demote while eight clients are mid-request.
      const demote = await vault(old.apiAddr, root).post(`${base}/primary/demote`, {});
      expect(demote.status).toBe(200);
      expect(demote.body.data).toMatchObject({ confirmed: ['sw-east'], unconfirmed: [], timed_out: false });
      finalWal = demote.body.data.last_wal as number;

      // After the demote the old node takes no writes: refused, never acknowledged.
      const late = await vault(old.apiAddr, root).put('secret/data/too-late', { data: { value: 'x' } });
      expect(late.status).toBeGreaterThanOrEqual(400);
    } finally {
      await writer.stop();
    }
    const acked = writer.acked;
    expect(acked.length).toBeGreaterThan(300);

    // The secondary applied the final index and knows it: promote needs no force.
    const st = await replStatus(s.apiAddr, kind);
    expect(st.lag_entries).toBe(0);
    const promote = kind === 'dr'
      ? await vault(s.apiAddr).post(`${DR}/secondary/promote`, { dr_operation_token: opToken })
      : await vault(s.apiAddr, s.rootToken).post(`${PERF}/secondary/promote`, {});
    expect({ status: promote.status, body: promote.body }).toEqual({ status: 204, body: promote.body });
    await eventually(async () => expect((await replStatus(s.apiAddr, kind)).mode).toBe('primary'), { timeoutMs: 10_000 });

    const v = vault(s.apiAddr, kind === 'dr' ? root : s.rootToken);
    const missing: string[] = [];
    for (const [path, value] of lastAcked(acked)) {
      const r = await v.get(path);
      if (r.status !== 200 || r.body?.data?.data?.value !== value) missing.push(`${path}=${value} (${r.status})`);
    }
    expect({ acknowledged: acked.length, missing }).toEqual({ acknowledged: acked.length, missing: [] });
  }, 120_000);
});
