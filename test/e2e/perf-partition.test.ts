/**
 * A partition between a filtered performance secondary and its primary, played by a TCP proxy on
 * the cluster channel (real processes). The primary keeps only 50 WAL entries, so after 300
 * writes behind the cut the secondary's position is gone from the primary's tail: on heal it must
 * reconcile by Merkle diff, and move exactly the keys of its filtered subset that changed, nothing
 * of the filtered-out mount. While cut it keeps serving reads, and a forwarded write is a clear 503.
 *
 * KV v1 mounts: one secret is one storage key, so the expected counts are exact.
 */
import type { TcpProxy } from '../support/tcp-proxy.js';
import { eventually, filteredSet, kvDataSet, replStatus, startCluster, useHarness, vault, waitInSync } from '../harness/index.js';

const h = useHarness();
let proxy: TcpProxy | undefined;

const MOUNTS = ['alpha', 'beta', 'gamma'] as const;
const KEYS = 4;
const WRITES = 300;
const SLOW_START = { readyTimeoutMs: 45_000 };

test('a filtered performance secondary partitioned past the WAL bound reconciles exactly its changed subset on heal', async () => {
  // The proxy sits in front of the primary's cluster port and is the address the secondary is told.
  const c = await startCluster(h, {
    node: SLOW_START,
    primary: { replication: { walMaxEntries: 50 } },
    proxy: true,
    performance: [{ id: 'perf-far', filter: { mode: 'allow', paths: ['alpha', 'beta'] } }],
    beforeEnable: async ({ primary }) => {
      const v = primary.vault();
      for (const m of MOUNTS) {
        expect((await v.post(`sys/mounts/${m}`, { type: 'kv', options: { version: '1' } })).status).toBe(204);
        for (let k = 0; k < KEYS; k++) expect((await v.put(`${m}/k${k}`, { value: 'initial' })).status).toBe(204);
      }
    },
  });
  const p = c.primary;
  const s = c.performance[0]!;
  const pk = { rootToken: p.rootToken };
  const pv = vault(p.apiAddr, pk.rootToken);
  proxy = c.proxy!;
  // The enabling root token does not survive the activation: startCluster made one there from the primary's shares.
  const sRoot = s.rootToken;
  const sv = vault(s.apiAddr, sRoot);
  await eventually(async () => {
    await waitInSync(p.apiAddr, s.apiAddr, 2_000, 'performance');
    expect(await kvDataSet(s.apiAddr, sRoot, MOUNTS)).toEqual(filteredSet(await kvDataSet(p.apiAddr, pk.rootToken, MOUNTS), ['alpha', 'beta']));
  }, { timeoutMs: 20_000 });
  expect((await replStatus(s.apiAddr, 'performance')).primary_cluster_addr).toBe(`https://${proxy.address}`);

  proxy.cut();
  const cutAt = await eventually(async () => {
    const st = await replStatus(s.apiAddr, 'performance');
    expect(st.state).not.toBe('stream-wals');
    return st;
  }, { timeoutMs: 10_000, intervalMs: 50 });

  // 300 writes over every mount, then one key deleted in an allowed and in the denied mount.
  const lastWalBefore = (await replStatus(p.apiAddr, 'performance')).last_wal as number;
  for (let i = 0; i < WRITES; i++) {
    const m = MOUNTS[i % MOUNTS.length]!;
    expect((await pv.put(`${m}/k${Math.floor(i / MOUNTS.length) % KEYS}`, { value: `v${i}` })).status).toBe(204);
  }
  for (const m of ['alpha', 'gamma']) expect((await pv.delete(`${m}/k${KEYS - 1}`)).status).toBe(204);
  expect((await replStatus(p.apiAddr, 'performance')).last_wal - lastWalBefore).toBe(WRITES + 2);

  // Cut off, it still serves what it holds, and refuses to forward a write (nothing written).
  const stale = await kvDataSet(s.apiAddr, sRoot, MOUNTS);
  expect(stale.alpha).toEqual({ k0: 'initial', k1: 'initial', k2: 'initial', k3: 'initial' });
  expect((await replStatus(s.apiAddr, 'performance')).last_remote_wal).toBe(cutAt.last_remote_wal);
  const refused = await sv.put('beta/k0', { value: 'while-cut' });
  expect(refused.status).toBe(503);
  expect(proxy.stats().refused).toBeGreaterThan(0);

  proxy.heal();
  const full = await kvDataSet(p.apiAddr, pk.rootToken, MOUNTS);
  expect(full.alpha).not.toHaveProperty(`k${KEYS - 1}`);
  const healed = await eventually(async () => {
    const { secondary } = await waitInSync(p.apiAddr, s.apiAddr, 2_000, 'performance');
    expect(await kvDataSet(s.apiAddr, sRoot, MOUNTS)).toEqual(filteredSet(full, ['alpha', 'beta']));
    return secondary;
  }, { timeoutMs: 30_000, intervalMs: 100 });
  // Fetched: alpha k0-k2 and beta k0-k3 (changed); deleted: alpha/k3. Nothing of gamma moved.
  expect(healed.last_merkle_sync).toEqual({ fetched_keys: 3 + KEYS, deleted_keys: 1 });
  expect(await kvDataSet(s.apiAddr, sRoot, ['gamma'])).toEqual({ gamma: null });

  // It streams again: a new write arrives through the healed proxy without another reconcile.
  expect((await pv.put('beta/after-heal', { value: 'x' })).status).toBe(204);
  await eventually(async () => expect((await sv.get('beta/after-heal')).body?.data).toEqual({ value: 'x' }), { timeoutMs: 10_000 });
  expect((await replStatus(s.apiAddr, 'performance')).last_merkle_sync).toEqual(healed.last_merkle_sync);
}, 90_000);
