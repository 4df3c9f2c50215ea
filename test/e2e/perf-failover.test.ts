/**
 * The primary of a performance set dies with forwarded writes in flight (real processes,
 * SIGKILL): its DR secondary is promoted with a DR operation token from the primary's unseal keys
 * and holds every write a performance secondary acknowledged (the primary answers a forwarded
 * write only once its connected DR secondaries applied it); both performance secondaries follow
 * it by address (update_primary_addrs, no new token), filters intact, then serve and forward again.
 */
import {
  drOperationToken, eventually, PERF, replStatus, startCluster, startWriter, useHarness, vault, waitInSync, DR, type StartedNode, type Writer,
} from '../harness/index.js';

const h = useHarness();
const KV2 = { type: 'kv', options: { version: '2' } };
// Nodes start in parallel on a 2-core machine shared with other work: start-up is CPU-bound.
const SLOW_START = { readyTimeoutMs: 45_000 };

interface Joined {
  readonly node: StartedNode;
  readonly token: string;
}

test('SIGKILL the primary under forwarded writes: the promoted DR secondary holds every acknowledged one with its value, and the performance secondaries follow it', async () => {
  const writers: Writer[] = [];
  try {
    // A DR secondary and two filtered performance secondaries; root on each performance one comes
    // from the primary's shares (the enabling token does not survive the activation).
    const c = await startCluster(h, {
      node: SLOW_START,
      dr: ['dr-r'],
      performance: [
        { id: 'perf-a', filter: { mode: 'deny', paths: ['other'] } },
        { id: 'perf-d', filter: { mode: 'allow', paths: ['other'] } },
      ],
      beforeEnable: async ({ primary }) => {
        const v = primary.vault();
        for (const m of ['secret', 'other']) expect((await v.post(`sys/mounts/${m}`, KV2)).status).toBe(204);
        expect((await v.put('other/data/o', { data: { value: 'o' } })).status).toBe(200);
      },
    });
    const p = c.primary;
    const pk = { rootToken: p.rootToken, keys: p.unsealKeys };
    const [a, d] = [0, 1].map((i) => ({ node: c.performance[i]!, token: c.performance[i]!.rootToken })) as [Joined, Joined];
    const r = { node: c.dr[0]! };
    await Promise.all([waitInSync(p.apiAddr, a.node.apiAddr, 20_000, 'performance'), waitInSync(p.apiAddr, d.node.apiAddr, 20_000, 'performance'), waitInSync(p.apiAddr, r.node.apiAddr)]);

    // Four clients write through the performance secondary, each to a new path every time, so
    // every acknowledged write must be readable with exactly its value afterwards.
    const w = startWriter({ apiAddr: a.node.apiAddr, token: a.token, clients: 4, path: (c, n) => `secret/data/fwd/c${c}/n${n}` });
    writers.push(w);
    await eventually(() => expect(w.acked.length).toBeGreaterThan(60), { timeoutMs: 30_000, intervalMs: 10 });
    expect(await p.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    const acked = await w.stop();
    // Once the primary is gone a forwarded write is refused (503), never acknowledged.
    const lost = await vault(a.node.apiAddr, a.token).put('secret/data/while-down', { data: { value: 'x' } });
    expect(lost.status).toBe(503);

    const op = await drOperationToken(r.node.apiAddr, pk.keys.slice(0, 2));
    let promote = await vault(r.node.apiAddr).post(`${DR}/secondary/promote`, { dr_operation_token: op });
    if (promote.status === 400) {
      // It knew it was behind the dead primary (writes committed there but not yet acknowledged):
      // force is the operator's call, and what follows proves nothing acknowledged was lacking.
      expect(promote.body.errors[0]).toMatch(/still catching up/);
      promote = await vault(r.node.apiAddr).post(`${DR}/secondary/promote`, { dr_operation_token: op, force: true });
    }
    expect(promote.status).toBe(204);
    const rv = vault(r.node.apiAddr, pk.rootToken);
    // A forwarded write is acknowledged only once every connected DR secondary applied it
    // (REPLICATION.md 8; NOTES.md): each one is on the promoted node, with exactly its value.
    const wrong: string[] = [];
    const missing: string[] = [];
    for (const x of acked) {
      const got = await rv.get(x.path);
      if (got.status === 404) missing.push(x.path);
      else if (got.status !== 200 || got.body.data.data.value !== x.value) wrong.push(`${x.path}: ${got.status} ${JSON.stringify(got.body?.data?.data)}`);
    }
    expect({ acked: acked.length, wrong, missing }).toEqual({ acked: acked.length, wrong: [], missing: [] });

    // The promoted DR secondary is the performance primary of the same set, filters intact.
    const rp = await eventually(async () => {
      const st = await replStatus(r.node.apiAddr, 'performance');
      expect(st.mode).toBe('primary');
      return st;
    }, { timeoutMs: 15_000 });
    expect(rp.known_secondaries).toEqual(['perf-a', 'perf-d']);
    expect((await rv.get(`${PERF}/primary/paths-filter/perf-d`)).body.data).toEqual({ mode: 'allow', paths: ['other'] });

    // Both follow it by address alone, with their own sudo tokens: no new activation token.
    for (const s of [a, d]) {
      const moved = await vault(s.node.apiAddr, s.token).post(`${PERF}/secondary/update-primary`, { update_primary_addrs: [rp.primary_cluster_addr] });
      expect({ status: moved.status, body: moved.body }).toEqual({ status: 204, body: null });
    }
    await Promise.all([waitInSync(r.node.apiAddr, a.node.apiAddr, 20_000, 'performance'), waitInSync(r.node.apiAddr, d.node.apiAddr, 20_000, 'performance')]);

    // They serve what the new primary writes, each through its own filter...
    expect((await rv.put('secret/data/after', { data: { value: 'from-r' } })).status).toBe(200);
    expect((await rv.put('other/data/after', { data: { value: 'other-from-r' } })).status).toBe(200);
    const av = vault(a.node.apiAddr, a.token);
    const dv = vault(d.node.apiAddr, d.token);
    await eventually(async () => {
      expect((await av.get('secret/data/after')).body?.data?.data).toEqual({ value: 'from-r' });
      expect((await dv.get('other/data/after')).body?.data?.data).toEqual({ value: 'other-from-r' });
    }, { timeoutMs: 15_000 });
    expect((await av.get('other/data/after')).status).toBe(404);
    expect((await dv.get('secret/data/after')).status).toBe(404);
    // ...and forward to it again: acknowledged by the new primary, readable here at once.
    const fwd = await av.put('secret/data/fwd-after', { data: { value: 'via-a' } });
    expect(fwd.status).toBe(200);
    expect(fwd.body.warnings).toBeNull();
    expect((await av.get('secret/data/fwd-after')).body.data.data).toEqual({ value: 'via-a' });
    expect((await rv.get('secret/data/fwd-after')).body.data.data).toEqual({ value: 'via-a' });
    expect((await dv.put('other/data/fwd-after', { data: { value: 'via-d' } })).status).toBe(200);
    expect((await rv.get('other/data/fwd-after')).body.data.data).toEqual({ value: 'via-d' });
  } finally {
    for (const w of writers) await w.stop();
  }
}, 90_000);
