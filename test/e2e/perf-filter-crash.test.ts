/**
 * Four real processes: a primary, two performance secondaries with different paths filters (one
 * allow, one deny) and a DR secondary. A performance secondary is SIGKILLed while its filter
 * changes (changed right after the kill; then changed and killed while the reconcile runs); on
 * restart on the same data dir, unsealed with the primary's keys, it converges to exactly the
 * data its filter lets through, its local mount intact, and the other two secondaries never move.
 *
 * Data sets, not Merkle roots, are compared on performance secondaries: their root also covers
 * their own local data. The mounts are KV v1 so one secret is one key and a LIST shows them all.
 */
import {
  eventually, filteredSet, kvDataSet, PERF, replStatus, setPathsFilter, startCluster, unseal, useHarness, vault, waitInSync, type KvDataSet,
  type StartedNode,
} from '../harness/index.js';

const h = useHarness();
const MOUNTS = ['alpha', 'beta', 'gamma'] as const;
const KV1 = { type: 'kv', options: { version: '1' } };
// Nodes start in parallel on a 2-core machine shared with other work: start-up is CPU-bound.
const SLOW_START = { readyTimeoutMs: 45_000 };

interface Joined {
  readonly node: StartedNode;
  readonly token: string;
}

async function write(apiAddr: string, token: string, round: string): Promise<void> {
  const v = vault(apiAddr, token);
  for (const m of MOUNTS) for (let k = 0; k < 4; k++) expect((await v.put(`${m}/k${k}`, { value: `${m}-${k}-${round}` })).status).toBe(204);
}

/** Waits until the secondary holds exactly `expected` (and stays in sync); returns its status. */
async function converges(pApi: string, sApi: string, sToken: string, expected: KvDataSet): Promise<unknown> {
  return eventually(async () => {
    const { secondary } = await waitInSync(pApi, sApi, 2_000, 'performance');
    expect(await kvDataSet(sApi, sToken, MOUNTS)).toEqual(expected);
    return secondary;
  }, { timeoutMs: 30_000, intervalMs: 100 });
}

test('a performance secondary killed while its filter changes restarts into exactly its filtered data set', async () => {
  // Four processes, started at once: node start-up dominates the wall time on a loaded machine.
  // Tokens are local to a performance secondary, and the enabling one does not survive the
  // activation: startCluster gives each a root token of its own from the primary's shares.
  const c = await startCluster(h, {
    node: SLOW_START,
    dr: ['dr-one'],
    performance: [
      { id: 'perf-allow', filter: { mode: 'allow', paths: ['alpha'] } },
      { id: 'perf-deny', filter: { mode: 'deny', paths: ['beta'] } },
    ],
    beforeEnable: async ({ primary }) => {
      for (const m of MOUNTS) expect((await primary.vault().post(`sys/mounts/${m}`, KV1)).status).toBe(204);
      await write(primary.apiAddr, primary.rootToken, 'r0');
    },
  });
  const p = c.primary;
  const pk = { rootToken: p.rootToken, keys: p.unsealKeys };
  const pv = vault(p.apiAddr, pk.rootToken);
  const [a, d] = [0, 1].map((i) => ({ node: c.performance[i]!, token: c.performance[i]!.rootToken })) as [Joined, Joined];
  const r = { node: c.dr[0]! };
  // A local mount on the allow secondary: its own data, which no filter or reconcile may touch.
  const av = vault(a.node.apiAddr, a.token);
  expect((await av.post('sys/mounts/scratch', { ...KV1, local: true })).status).toBe(204);
  expect((await av.put('scratch/mine', { value: 'local' })).status).toBe(204);

  let full = await kvDataSet(p.apiAddr, pk.rootToken, MOUNTS);
  await converges(p.apiAddr, a.node.apiAddr, a.token, filteredSet(full, ['alpha']));
  await converges(p.apiAddr, d.node.apiAddr, d.token, filteredSet(full, ['alpha', 'gamma']));
  await waitInSync(p.apiAddr, r.node.apiAddr);

  // SIGKILL, then the filter flips to the other mounts and data moves while it is down.
  expect(await a.node.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
  await setPathsFilter(p.apiAddr, pk.rootToken, 'perf-allow', { mode: 'allow', paths: ['beta', 'gamma'] });
  await write(p.apiAddr, pk.rootToken, 'r1');
  expect((await pv.delete('gamma/k3')).status).toBe(204);
  expect((await pv.get(`${PERF}/primary/paths-filter/perf-allow`)).body.data).toEqual({ mode: 'allow', paths: ['beta', 'gamma'] });

  let again = await h.startNode({ ...SLOW_START, dataDir: a.node.dataDir });
  for (const key of pk.keys.slice(0, 2)) await unseal(again.apiAddr, key);
  full = await kvDataSet(p.apiAddr, pk.rootToken, MOUNTS);
  expect(full.gamma).not.toHaveProperty('k3');
  const st = await converges(p.apiAddr, again.apiAddr, a.token, filteredSet(full, ['beta', 'gamma']));
  expect(st).toMatchObject({ mode: 'secondary', secondary_id: 'perf-allow' });
  expect((await vault(again.apiAddr, a.token).get('alpha/k0')).status).toBe(404);
  expect((await vault(again.apiAddr, a.token).get('scratch/mine')).body.data).toEqual({ value: 'local' });
  await eventually(async () => {
    const dyn = await vault(again.apiAddr, a.token).get(`${PERF}/secondary/dynamic-filter/perf-allow`);
    expect(dyn.body.data.dynamic_filtered_mounts).toEqual(['alpha/']);
  });

  // The others never moved: the deny secondary holds its own subset, the DR secondary everything.
  await converges(p.apiAddr, d.node.apiAddr, d.token, filteredSet(full, ['alpha', 'gamma']));
  await waitInSync(p.apiAddr, r.node.apiAddr);
  expect((await replStatus(p.apiAddr, 'performance')).known_secondaries).toEqual(['perf-allow', 'perf-deny']);
}, 90_000);

test('a performance secondary killed while the reconcile of a filter change runs restarts into exactly its new subset', async () => {
  const c = await startCluster(h, {
    node: SLOW_START,
    performance: [{ id: 'perf-one', filter: { mode: 'allow', paths: ['alpha', 'beta'] } }],
    beforeEnable: async ({ primary }) => {
      for (const m of MOUNTS) expect((await primary.vault().post(`sys/mounts/${m}`, KV1)).status).toBe(204);
      await write(primary.apiAddr, primary.rootToken, 'r0');
    },
  });
  const p = c.primary;
  const s = c.performance[0]!;
  const pk = { rootToken: p.rootToken, keys: p.unsealKeys };
  const sRoot = s.rootToken;
  await converges(p.apiAddr, s.apiAddr, sRoot, filteredSet(await kvDataSet(p.apiAddr, pk.rootToken, MOUNTS), ['alpha', 'beta']));

  // The filter changes and the secondary dies at once, while that reconcile is likely under way.
  await setPathsFilter(p.apiAddr, pk.rootToken, 'perf-one', { mode: 'deny', paths: ['alpha'] });
  expect(await s.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
  await write(p.apiAddr, pk.rootToken, 'r1');
  const again = await h.startNode({ ...SLOW_START, dataDir: s.dataDir });
  for (const key of pk.keys.slice(0, 2)) await unseal(again.apiAddr, key);
  const full = await kvDataSet(p.apiAddr, pk.rootToken, MOUNTS);
  await converges(p.apiAddr, again.apiAddr, sRoot, filteredSet(full, ['beta', 'gamma']));
  expect((await vault(again.apiAddr, sRoot).get('alpha/k0')).status).toBe(404);
}, 90_000);
