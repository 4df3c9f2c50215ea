/**
 * Prometheus gauges of replication, per kind and per secondary, on both ends of a DR pair and a
 * performance pair (in-process nodes, real gRPC): the values are those of the status endpoints.
 */
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { inSync, replStatus } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const gauge = (text: string, name: string, labels: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

describe('replication metrics', () => {
  const nodes: TestNode[] = [];
  afterEach(async () => {
    for (const n of nodes.splice(0).reverse()) await n.stop();
  });

  it('report mode, last WAL and lag per kind, and each secondary on the primary, DR secondary included', async () => {
    const p = await startTestNode();
    const s = await startTestNode();
    nodes.push(p, s);
    await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    await joinSecondary(p, s, 'dr-east');
    for (let i = 0; i < 5; i++) await p.call('PUT', `secret/data/m/${i}`, { data: { i } });

    await eventually(async () => {
      const text = (await p.call('GET', 'sys/metrics?format=prometheus')).text;
      expect(gauge(text, 'tessera_replication_mode', 'kind="dr",mode="primary"')).toBe(1);
      expect(gauge(text, 'tessera_replication_mode', 'kind="performance",mode="disabled"')).toBe(1);
      expect(gauge(text, 'tessera_replication_last_wal', 'kind="dr"')).toBe((await replStatus(p, 'dr')).last_wal);
      expect(gauge(text, 'tessera_replication_secondary_connected', 'kind="dr",secondary_id="dr-east"')).toBe(1);
      expect(gauge(text, 'tessera_replication_secondary_lag_entries', 'kind="dr",secondary_id="dr-east"')).toBe(0);
    });

    // The DR secondary answers sys/metrics too (the primary's tokens replicate to it).
    await eventually(async () => {
      const r = await s.call('GET', 'sys/metrics?format=prometheus', undefined, { token: p.rootToken });
      expect(r.status).toBe(200);
      expect(gauge(r.text, 'tessera_replication_mode', 'kind="dr",mode="secondary"')).toBe(1);
      expect(gauge(r.text, 'tessera_replication_last_remote_wal', 'kind="dr"')).toBe((await replStatus(p, 'dr')).last_wal);
      expect(gauge(r.text, 'tessera_replication_lag_entries', 'kind="dr"')).toBe(0);
    });
  });

  it('report WAL headroom, heartbeat age and merkle-sync counters: a secondary that fell off the WAL shows 0, then a finished sync', async () => {
    const p = await startTestNode({ walMaxEntries: 30 });
    let s = await startTestNode();
    nodes.push(p);
    await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    await joinSecondary(p, s, 'dr-east');
    await p.call('PUT', 'secret/data/h/0', { data: { i: 0 } });
    await eventually(async () => {
      const view = (await replStatus(p, 'dr')).secondaries[0];
      // In sync: the whole bound is headroom; writes were just made, so seconds are finite.
      expect(view).toMatchObject({ wal_headroom_entries: 30 });
      expect(view.wal_headroom_seconds).toEqual(expect.any(Number));
      const text = (await p.call('GET', 'sys/metrics?format=prometheus')).text;
      expect(gauge(text, 'tessera_replication_secondary_wal_headroom_entries', 'kind="dr",secondary_id="dr-east"')).toBe(30);
      expect(gauge(text, 'tessera_replication_secondary_heartbeat_age_seconds', 'kind="dr",secondary_id="dr-east"')).toBeLessThan(3);
      const st = await s.call('GET', 'sys/metrics?format=prometheus', undefined, { token: p.rootToken });
      expect(gauge(st.text, 'tessera_replication_primary_heartbeat_age_seconds', 'kind="dr"')).toBeLessThan(3);
      expect(gauge(st.text, 'tessera_replication_state', 'kind="dr",state="stream-wals"')).toBe(1);
    });

    const dir = s.dataDir;
    await s.stop({ keepDir: true });
    for (let i = 1; i <= 40; i++) await p.call('PUT', `secret/data/h/${i}`, { data: { i } });
    const gone = (await replStatus(p, 'dr')).secondaries[0];
    expect(gone.wal_headroom_entries).toBe(0);
    expect(gone.wal_headroom_seconds).toBe(0);
    await eventually(async () => {
      const text = (await p.call('GET', 'sys/metrics?format=prometheus')).text;
      expect(gauge(text, 'tessera_replication_secondary_heartbeat_age_seconds', 'kind="dr",secondary_id="dr-east"')).toBeGreaterThan(1);
    });

    // Back on its storage: it reconciles (merkle-sync) and the counters say so, in status and metrics.
    s = await startTestNode({ dir, initialize: false });
    nodes.push(s);
    for (const key of p.unsealKeys.slice(0, 2)) await s.call('PUT', 'sys/unseal', { key }, { token: null });
    await inSync(p, s, { streaming: true });
    await eventually(async () => {
      const st = await replStatus(s, 'dr');
      expect(st.merkle_syncs.count).toBeGreaterThanOrEqual(1);
      expect(st.merkle_syncs.fetched_keys).toBeGreaterThan(0);
      const text = (await s.call('GET', 'sys/metrics?format=prometheus', undefined, { token: p.rootToken })).text;
      expect(gauge(text, 'tessera_replication_merkle_syncs_total', 'kind="dr"')).toBe(st.merkle_syncs.count);
      expect(gauge(text, 'tessera_replication_merkle_sync_keys_fetched_total', 'kind="dr"')).toBe(st.merkle_syncs.fetched_keys);
    });
  }, 60_000);

  it('label a performance secondary by kind, time its forwarded writes on both ends, and drop it from the gauges once revoked', async () => {
    const p = await startTestNode();
    const f = await startTestNode();
    nodes.push(p, f);
    await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    await joinSecondary(p, f, 'perf-eu', 'performance');
    // A write on the performance secondary is forwarded to the primary: both ends time it.
    await eventually(async () => expect((await f.call('GET', 'sys/mounts')).body.data['secret/']).toBeDefined());
    expect((await f.call('PUT', 'secret/data/fwd', { data: { v: 1 } })).status).toBe(200);
    const count = (text: string, side: string) => gauge(text, 'tessera_replication_forwarded_write_duration_seconds_count', `kind="performance",side="${side}",secondary_id="perf-eu",outcome="ok"`);
    expect(count((await f.call('GET', 'sys/metrics?format=prometheus')).text, 'forwarded')).toBe(1);
    expect(count((await p.call('GET', 'sys/metrics?format=prometheus')).text, 'executed')).toBe(1);
    await eventually(async () => {
      const text = (await p.call('GET', 'sys/metrics?format=prometheus')).text;
      expect(gauge(text, 'tessera_replication_mode', 'kind="performance",mode="primary"')).toBe(1);
      expect(gauge(text, 'tessera_replication_secondary_connected', 'kind="performance",secondary_id="perf-eu"')).toBe(1);
      expect(gauge(text, 'tessera_replication_secondary_connected', 'kind="dr",secondary_id="perf-eu"')).toBeUndefined();
    });
    expect((await p.call('POST', 'sys/replication/performance/primary/revoke-secondary', { id: 'perf-eu' })).status).toBe(204);
    await eventually(async () => {
      const text = (await p.call('GET', 'sys/metrics?format=prometheus')).text;
      expect(gauge(text, 'tessera_replication_secondary_connected', 'kind="performance",secondary_id="perf-eu"')).not.toBe(1);
    });
  });
});
