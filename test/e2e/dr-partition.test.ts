/**
 * A partition between a DR secondary and its primary, played by a TCP proxy on the cluster
 * channel. The primary keeps only 50 WAL entries, so after 301 writes behind the cut the
 * secondary's guard is gone from the primary's tail: on heal it must reconcile (merkle-diff, then
 * merkle-sync), fetch exactly the keys that changed, delete exactly the one that was deleted, and
 * go back to streaming with the same Merkle root.
 *
 * The writes go to a KV v1 mount so that one secret is one storage key and the expected counts
 * are exact (KV v2 adds version and metadata records and trims old versions).
 */
import type { TcpProxy } from '../support/tcp-proxy.js';
import { drStatus, eventually, startCluster, useHarness, vault, waitInSync, type Body, type StartedNode } from '../harness/index.js';

const h = useHarness();
let proxy: TcpProxy | undefined;

const KEYS = 12;
const WRITES = 300;
const SYNC_DONE = 'merkle-sync finished; streaming';

function syncLogs(lines: readonly string[]): Body[] {
  return lines.filter((l) => l.includes(SYNC_DONE)).map((l) => JSON.parse(l));
}

describe('partition through a TCP proxy on the cluster channel', () => {
  let pv: ReturnType<typeof vault>;
  let pApi = '';
  let s: StartedNode;
  let syncsBefore = 0;
  let cutAt: Body;
  let primaryNow: Body;

  test('the secondary activates and streams through the proxy', async () => {
    // The proxy sits in front of the primary's (fixed) cluster port before primary/enable, and is
    // the address secondaries are told: every cluster call crosses it.
    const c = await startCluster(h, {
      primary: { replication: { walMaxEntries: 50 } },
      proxy: true,
      dr: ['dr-far'],
      beforeEnable: async ({ primary }) => {
        pv = primary.vault();
        expect((await pv.post('sys/mounts/kv', { type: 'kv', options: { version: '1' } })).status).toBe(204);
        for (let k = 0; k < KEYS; k++) expect((await pv.put(`kv/k${k}`, { value: 'initial' })).status).toBe(204);
      },
    });
    const p = c.primary;
    pApi = p.apiAddr;
    proxy = c.proxy!;
    expect((await drStatus(p.apiAddr)).primary_cluster_addr).toBe(`https://${proxy.address}`);
    s = c.dr[0]!;
    const synced = await waitInSync(p.apiAddr, s.apiAddr);
    expect(synced.secondary.primary_cluster_addr).toBe(`https://${proxy.address}`);
    expect(proxy.stats().forwarded).toBeGreaterThan(0);
    expect(proxy.stats().open).toBeGreaterThan(0);
    syncsBefore = syncLogs(s.stderrLines).length;
  }, 30_000);

  test('cut: the secondary leaves stream-wals at once', async () => {
    proxy!.cut();
    cutAt = await eventually(async () => {
      const st = await drStatus(s.apiAddr);
      expect(st.state).not.toBe('stream-wals');
      return st;
    }, { timeoutMs: 10_000, intervalMs: 50 });
    expect(cutAt.last_error).toBeTruthy();
  }, 15_000);

  test('301 writes behind the cut do not reach the secondary', async () => {
    // 300 writes over 12 keys, then one key deleted: 301 WAL entries, far beyond the tail of 50.
    for (let i = 0; i < WRITES; i++) expect((await pv.put(`kv/k${i % KEYS}`, { value: `v${i}` })).status).toBe(204);
    expect((await pv.delete(`kv/k${KEYS - 1}`)).status).toBe(204);
    primaryNow = await drStatus(pApi);
    expect(primaryNow.last_wal - cutAt.last_wal).toBe(WRITES + 1);
    const stillCut = await drStatus(s.apiAddr);
    expect(stillCut.last_wal).toBe(cutAt.last_wal);
    expect(stillCut.merkle_root).toBe(cutAt.merkle_root);
    expect(stillCut.state).not.toBe('stream-wals');
    expect(proxy!.stats().refused).toBeGreaterThan(0);
  }, 30_000);

  test('while cut, status reports the connection to the primary as not ready', async () => {
    // The secondary has been retrying against a refusing address for a while now.
    await eventually(async () => expect((await drStatus(s.apiAddr)).connection_state).not.toBe('ready'), { timeoutMs: 3_000, intervalMs: 50 });
  }, 10_000);

  test('heal: it reconciles exactly the changed keys, then streams with the same Merkle root', async () => {
    proxy!.heal();
    const after = await eventually(async () => {
      const st = await drStatus(s.apiAddr);
      expect(syncLogs(s.stderrLines).length).toBe(syncsBefore + 1);
      expect(st.state).toBe('stream-wals');
      return st;
    }, { timeoutMs: 20_000, intervalMs: 20 });

    // Changed: the 11 surviving keys (each rewritten 25 times, fetched once); deleted: one.
    expect(after.last_merkle_sync).toEqual({ fetched_keys: KEYS - 1, deleted_keys: 1 });
    expect(syncLogs(s.stderrLines).at(-1)).toMatchObject({ fetched: KEYS - 1, deleted: 1, guard: String(primaryNow.last_wal) });

    const { primary, secondary } = await waitInSync(pApi, s.apiAddr);
    expect(secondary.merkle_root).toBe(primary.merkle_root);
    expect(secondary.last_wal).toBe(primaryNow.last_wal);

    // It streams again: a new write arrives through the healed proxy without another sync.
    expect((await pv.put('kv/after-heal', { value: 'x' })).status).toBe(204);
    const streamed = await waitInSync(pApi, s.apiAddr);
    expect(streamed.secondary.last_wal).toBe(primaryNow.last_wal + 1);
    expect(streamed.secondary.last_merkle_sync).toEqual({ fetched_keys: KEYS - 1, deleted_keys: 1 });
    expect(syncLogs(s.stderrLines).length).toBe(syncsBefore + 1);
  }, 30_000);
});
