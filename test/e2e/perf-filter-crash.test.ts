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
import type { Kind } from '../../src/core/replication/index.js';
import {
  activateSecondary, enablePrimary, eventually, filteredSet, generateRoot, initAndUnseal, kvDataSet, PERF, replStatus, secondaryToken,
  setPathsFilter, unseal, useHarness, vault, waitInSync, type InitResult, type KvDataSet, type StartedNode,
} from '../harness/index.js';

const h = useHarness();
const MOUNTS = ['alpha', 'beta', 'gamma'] as const;
const KV1 = { type: 'kv', options: { version: '1' } };
// Nodes start in parallel on a 2-core machine shared with other work: start-up is CPU-bound.
const SLOW_START = { readyTimeoutMs: 45_000 };

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
  const [p, ...others] = (await Promise.all([0, 1, 2, 3].map(() => h.startNode(SLOW_START)))) as [StartedNode, ...StartedNode[]];
  const pk: InitResult = await initAndUnseal(p.apiAddr, { shares: 3, threshold: 2 });
  const pv = vault(p.apiAddr, pk.rootToken);
  for (const m of MOUNTS) expect((await pv.post(`sys/mounts/${m}`, KV1)).status).toBe(204);
  await write(p.apiAddr, pk.rootToken, 'r0');
  await enablePrimary(p.apiAddr, pk.rootToken, '', 'performance');
  await enablePrimary(p.apiAddr, pk.rootToken, '', 'dr');

  // Tokens are local to a performance secondary, and the enabling one does not survive the
  // activation: each gets a root token of its own from the primary's shares.
  const join = async (node: StartedNode, id: string, kind: Kind): Promise<{ node: StartedNode; token: string }> => {
    const own = await initAndUnseal(node.apiAddr);
    await activateSecondary(node.apiAddr, own.rootToken, await secondaryToken(p.apiAddr, pk.rootToken, id, undefined, kind), kind);
    return { node, token: kind === 'performance' ? await generateRoot(node.apiAddr, pk.keys) : own.rootToken };
  };
  const [a, d, r] = await Promise.all([join(others[0]!, 'perf-allow', 'performance'), join(others[1]!, 'perf-deny', 'performance'), join(others[2]!, 'dr-one', 'dr')]);
  await setPathsFilter(p.apiAddr, pk.rootToken, 'perf-allow', { mode: 'allow', paths: ['alpha'] });
  await setPathsFilter(p.apiAddr, pk.rootToken, 'perf-deny', { mode: 'deny', paths: ['beta'] });
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
  const [p, s] = await Promise.all([h.startNode(SLOW_START), h.startNode(SLOW_START)]);
  const pk: InitResult = await initAndUnseal(p.apiAddr, { shares: 3, threshold: 2 });
  const pv = vault(p.apiAddr, pk.rootToken);
  for (const m of MOUNTS) expect((await pv.post(`sys/mounts/${m}`, KV1)).status).toBe(204);
  await write(p.apiAddr, pk.rootToken, 'r0');
  await enablePrimary(p.apiAddr, pk.rootToken, '', 'performance');
  const own = await initAndUnseal(s.apiAddr);
  await activateSecondary(s.apiAddr, own.rootToken, await secondaryToken(p.apiAddr, pk.rootToken, 'perf-one', undefined, 'performance'), 'performance');
  const sRoot = await generateRoot(s.apiAddr, pk.keys);
  await setPathsFilter(p.apiAddr, pk.rootToken, 'perf-one', { mode: 'allow', paths: ['alpha', 'beta'] });
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
