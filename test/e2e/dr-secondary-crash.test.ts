/**
 * A DR secondary killed with SIGKILL while the primary is under write load resumes from its last
 * applied WAL index after restart: no reconciliation, no index going backwards, and once writes
 * stop both clusters hold the same data (merkle_root) at the same WAL position.
 */
import {
  drStatus, eventually, startCluster, startWriter, unseal, useHarness, vault, waitInSync, type Body, type StartedNode,
} from '../harness/index.js';

const h = useHarness();

/** Samples the secondary's DR status every 25 ms; a down or sealed node yields no sample. */
function sampler(apiAddr: () => string) {
  const samples: Body[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const st = await drStatus(apiAddr());
        if (st.mode === 'secondary') samples.push(st);
      } catch {
        // Down, restarting or sealed.
      }
      // A sampling cadence (the samples are the point), not a wait for a state.
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return {
    samples,
    async stop() {
      running = false;
      await loop;
    },
  };
}

test('a SIGKILLed DR secondary resumes streaming from its last applied index', async () => {
  const cluster = await startCluster(h, { mountKv2: true, dr: ['dr-crash'] });
  const p = cluster.primary;
  const pk = { rootToken: p.rootToken, keys: p.unsealKeys };
  let s: StartedNode = cluster.dr[0]!;

  const writer = startWriter({ apiAddr: p.apiAddr, token: pk.rootToken, clients: 4, path: (c, n) => `secret/data/c${c}/k${n % 8}` });
  const watch = sampler(() => s.apiAddr);
  try {
    // Mid-stream: the secondary has applied some of the load, and the primary is still writing.
    const beforeKill = await eventually(async () => {
      const st = await drStatus(s.apiAddr);
      expect(st.state).toBe('stream-wals');
      expect(writer.acked.length).toBeGreaterThan(100);
      return st;
    }, { timeoutMs: 20_000, intervalMs: 25 });
    expect(await s.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    const lastSeenBeforeKill = Math.max(beforeKill.last_remote_wal, ...watch.samples.map((x) => x.last_remote_wal as number));
    expect(lastSeenBeforeKill).toBeGreaterThan(0);

    // The primary moves on while the secondary is down.
    const ackedAtKill = writer.acked.length;
    await eventually(() => expect(writer.acked.length).toBeGreaterThan(ackedAtKill + 100), { timeoutMs: 20_000, intervalMs: 25 });

    // Same data dir; it took over the primary's seal on activation, so the primary's keys open it.
    s = await h.startNode({ dataDir: s.dataDir });
    expect((await vault(s.apiAddr).get('sys/seal-status')).body).toMatchObject({ initialized: true, sealed: true, t: 2 });
    for (const key of pk.keys.slice(0, 2)) await unseal(s.apiAddr, key);
    expect((await vault(s.apiAddr).get('sys/seal-status')).body.sealed).toBe(false);

    const resumed = await eventually(async () => {
      const st = await drStatus(s.apiAddr);
      expect(st.state).toBe('stream-wals');
      expect(st.last_remote_wal).toBeGreaterThan(lastSeenBeforeKill);
      return st;
    }, { timeoutMs: 20_000, intervalMs: 25 });
    expect(resumed).toMatchObject({ mode: 'secondary', secondary_id: 'dr-crash', connection_state: 'ready' });

    await writer.stop();
    const { primary, secondary } = await waitInSync(p.apiAddr, s.apiAddr);
    await watch.stop();

    expect(writer.acked.length).toBeGreaterThan(ackedAtKill + 100);
    expect(secondary.merkle_root).toBe(primary.merkle_root);
    expect(secondary.last_wal).toBe(primary.last_wal);
    expect(secondary.last_remote_wal).toBe(primary.last_wal);
    // It resumed from its guard: nothing was diffed or synced, before or after the crash.
    expect(secondary).not.toHaveProperty('last_merkle_sync');
    expect(watch.samples.filter((x) => x.last_merkle_sync !== undefined)).toEqual([]);
    expect(watch.samples.filter((x) => x.state === 'merkle-diff' || x.state === 'merkle-sync')).toEqual([]);
    // last_remote_wal never went backwards, across the crash included.
    const seen = watch.samples.map((x) => x.last_remote_wal as number);
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.filter((x, i) => i > 0 && x < (seen[i - 1] as number))).toEqual([]);
    expect(seen.some((x) => x > lastSeenBeforeKill)).toBe(true);
  } finally {
    await writer.stop();
    await watch.stop();
  }
}, 60_000);
