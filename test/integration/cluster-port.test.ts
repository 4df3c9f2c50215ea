/**
 * A node that is both a DR primary and a performance primary serves both kinds on its one
 * configured cluster_addr (real gRPC mTLS, in-process nodes): each kind's secondary streams from
 * the same address, and one kind leaving the port leaves the other streaming.
 */
import { jest } from '@jest/globals';
import { freePort } from '../harness/dr.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, inSync, PERF, replStatus } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

jest.setTimeout(60_000);

describe('one cluster port for both kinds', () => {
  let p: TestNode;
  let dr: TestNode;
  let perf: TestNode;
  let clusterAddr: string;
  beforeEach(async () => {
    clusterAddr = `127.0.0.1:${await freePort()}`;
    [p, dr, perf] = await Promise.all([startTestNode({ clusterAddr }), startTestNode(), startTestNode()]);
    expect((await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await p.call('PUT', 'secret/data/before', { data: { v: 1 } })).status).toBe(200);
  });
  afterEach(async () => {
    await Promise.all([p.stop(), dr.stop(), perf.stop()]);
  });

  test('a DR primary and a performance primary share the configured cluster_addr; both secondaries stream', async () => {
    await joinSecondary(p, dr, 'dr-east', 'dr');
    await joinSecondary(p, perf, 'perf-east', 'performance');
    const [pd, pp] = [await replStatus(p, 'dr'), await replStatus(p, 'performance')];
    // Status answers in Vault's form (WIRE.md 8).
    const vaultForm = `https://${clusterAddr}`;
    expect([pd.primary_cluster_addr, pp.primary_cluster_addr]).toEqual([vaultForm, vaultForm]);
    expect((await replStatus(dr, 'dr')).known_primary_cluster_addrs).toEqual([vaultForm]);
    expect((await replStatus(perf, 'performance')).known_primary_cluster_addrs).toEqual([vaultForm]);

    expect((await p.call('PUT', 'secret/data/after', { data: { v: 2 } })).status).toBe(200);
    await inSync(p, dr, { streaming: true });
    await inSync(p, perf, { kind: 'performance' });
    await eventually(async () => expect((await perf.call('GET', 'secret/data/after')).body?.data?.data).toEqual({ v: 2 }));

    // The performance kind leaves the port; DR keeps streaming from the same address.
    expect((await p.call('POST', `${PERF}/primary/disable`, {})).status).toBe(204);
    expect((await p.call('PUT', 'secret/data/dr-only', { data: { v: 3 } })).status).toBe(200);
    const ds = await inSync(p, dr, { streaming: true });
    expect(ds.connection_state).toBe('ready');

    // And comes back on it while DR streams.
    expect((await p.call('POST', `${PERF}/primary/enable`, {})).status).toBe(204);
    expect((await replStatus(p, 'performance')).primary_cluster_addr).toBe(`https://${clusterAddr}`);
    expect((await p.call('PUT', 'secret/data/later', { data: { v: 4 } })).status).toBe(200);
    await inSync(p, dr, { streaming: true });
    expect((await replStatus(p, 'dr')).mode).toBe('primary');
    expect((await p.call('GET', `${DR}/status`, undefined, { token: null })).status).toBe(200);
  });
});
