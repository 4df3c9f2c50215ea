/**
 * Prometheus gauges of replication, per kind and per secondary, on both ends of a DR pair and a
 * performance pair (in-process nodes, real gRPC): the values are those of the status endpoints.
 */
import { eventually } from '../harness/eventually.js';
import { activatePair, replStatus } from '../support/dr.js';
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
    await activatePair(p, s, 'dr-east');
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

  it('label a performance secondary by kind, and drop it from the gauges once revoked', async () => {
    const p = await startTestNode();
    const f = await startTestNode();
    nodes.push(p, f);
    await activatePair(p, f, 'perf-eu', 'performance');
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
