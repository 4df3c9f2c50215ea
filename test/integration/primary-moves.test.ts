/**
 * The primary cluster's active node changes (issue 19 item 5, the secondaries' side), without HA:
 * a primary node advertises two cluster addresses (the unit's `clusterAddrs`), each a TCP proxy in
 * front of its one cluster port, and tells its secondaries the first. Its DR and performance
 * secondaries stream through the first; then the first is cut (connections reset, new ones
 * refused), as a dead active node's address is. Both secondaries must find the other address
 * themselves, stream on from their guard without a Merkle sync, receive the writes made during
 * and after the switch within 10 s, and the performance secondary's forwarded writes must reach
 * the primary through it; after a restart of their replication they dial that address first.
 * In-process nodes, real gRPC/mTLS on 127.0.0.1.
 */
import { jest } from '@jest/globals';
import { vaultClusterAddr } from '../../src/core/cluster-addr.js';
import { enablePrimary, freePort, secondaryToken } from '../harness/dr.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, drOperationToken, inSync, PERF, replStatus, type Kind } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

jest.setTimeout(90_000);

/** Merkle diffs and syncs a node's secondary loop of `kind` started, from its event history. */
function merkleEvents(n: TestNode, kind: Kind): number {
  return n.node.events.history().filter((e) => e.kind === kind && e.type.startsWith('merkle-')).length;
}

describe('secondaries follow their primary cluster to another address', () => {
  const nodes: TestNode[] = [];
  const proxies: TcpProxy[] = [];
  afterEach(async () => {
    for (const n of nodes.splice(0).reverse()) await n.stop();
    for (const x of proxies.splice(0)) await x.close();
  });

  test('a DR and a performance secondary switch to the other advertised address, with no Merkle sync, within 10 s', async () => {
    const port = await freePort();
    const p = await startTestNode({ clusterAddr: `127.0.0.1:${port}` });
    const dr = await startTestNode();
    const perf = await startTestNode();
    nodes.push(p, dr, perf);
    const first = await startTcpProxy(`127.0.0.1:${port}`);
    const second = await startTcpProxy(`127.0.0.1:${port}`);
    proxies.push(first, second);
    // What HA membership will give: every node's address. Secondaries are told the first.
    p.node.replication.advertiseClusterAddrs(() => [first.address, second.address]);
    expect((await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    await enablePrimary(p.apiAddr, p.rootToken, first.address, 'dr');
    await enablePrimary(p.apiAddr, p.rootToken, first.address, 'performance');
    await joinSecondary(p, dr, 'dr-east', 'dr');
    await joinSecondary(p, perf, 'perf-east', 'performance');
    expect((await p.call('PUT', 'secret/data/before', { data: { v: 0 } })).status).toBe(200);

    const known = [vaultClusterAddr(first.address), vaultClusterAddr(second.address)];
    const secondaries: [TestNode, Kind][] = [[dr, 'dr'], [perf, 'performance']];
    for (const [n, kind] of secondaries) {
      // Both addresses are known from the primary's replies; the connection is through the first.
      const st = await eventually(async () => {
        const s = await inSync(p, n, { kind, streaming: true });
        expect(s.known_primary_cluster_addrs).toEqual(known);
        return s;
      });
      expect(st.primary_cluster_addr).toBe(known[0]);
      expect(st.primaries[0].cluster_address).toBe(known[0]);
    }
    expect(second.stats().forwarded).toBe(0);
    const merkleBefore = secondaries.map(([n, kind]) => merkleEvents(n, kind));
    const lastSyncBefore = await Promise.all(secondaries.map(async ([n, kind]) => (await replStatus(n, kind)).last_merkle_sync));

    // The first address dies: open connections reset, new ones refused. Writes go on meanwhile.
    const cutAt = Date.now();
    first.cut();
    for (let i = 0; i < 5; i++) expect((await p.call('PUT', `secret/data/during-${i}`, { data: { i } })).status).toBe(200);

    // Both follow to the second address and stream again, within 10 s of the cut.
    for (const [n, kind] of secondaries) {
      await eventually(async () => {
        const s = await replStatus(n, kind);
        expect({ state: s.state, primary_cluster_addr: s.primary_cluster_addr, connection_state: s.connection_state }).toEqual({
          state: 'stream-wals', primary_cluster_addr: known[1], connection_state: 'ready',
        });
        expect(s.primaries[0].cluster_address).toBe(known[1]);
      }, { timeoutMs: Math.max(1, 10_000 - (Date.now() - cutAt)) });
    }
    // Through the second proxy: one connection per secondary at least.
    expect(second.stats().forwarded).toBeGreaterThanOrEqual(2);

    // Writes after the switch arrive too; everything within 10 s of the cut.
    expect((await p.call('PUT', 'secret/data/after', { data: { v: 1 } })).status).toBe(200);
    await eventually(async () => {
      for (const [n, kind] of secondaries) await inSync(p, n, { kind, streaming: true });
      for (let i = 0; i < 5; i++) expect((await perf.call('GET', `secret/data/during-${i}`)).body?.data?.data).toEqual({ i });
      expect((await perf.call('GET', 'secret/data/after')).body?.data?.data).toEqual({ v: 1 });
    }, { timeoutMs: Math.max(1, 10_000 - (Date.now() - cutAt)) });

    // Streamed on from the guard: no Merkle diff or sync ran, none is reported.
    expect(secondaries.map(([n, kind]) => merkleEvents(n, kind))).toEqual(merkleBefore);
    expect(await Promise.all(secondaries.map(async ([n, kind]) => (await replStatus(n, kind)).last_merkle_sync))).toEqual(lastSyncBefore);
    for (const [n, kind] of secondaries) expect((await replStatus(n, kind)).known_primary_cluster_addrs).toEqual(known);

    // A performance secondary forwards through the address it is connected to: the first is still cut.
    const fwd = await perf.call('PUT', 'secret/data/forwarded', { data: { via: 'second' } });
    expect(fwd.status).toBe(200);
    expect((await p.call('GET', 'secret/data/forwarded')).body.data.data).toEqual({ via: 'second' });
    expect(first.isCut).toBe(true);

    // The node connected to is persisted: a secondary whose replication restarts dials it first,
    // not the cut address it was activated with (which would count a refused connection).
    for (const [n, kind] of secondaries) {
      await eventually(() => expect(n.node.replication.drivers[kind].material.secondary?.connectedPrimaryClusterAddr).toBe(second.address));
    }
    const refusedBefore = first.stats().refused;
    for (const [n] of secondaries) {
      await n.node.replication.stop();
      await n.node.replication.start();
    }
    expect((await p.call('PUT', 'secret/data/after-restart', { data: { v: 2 } })).status).toBe(200);
    for (const [n, kind] of secondaries) {
      expect(await inSync(p, n, { kind, streaming: true })).toMatchObject({ primary_cluster_addr: known[1], known_primary_cluster_addrs: known });
    }
    expect(first.stats().refused).toBe(refusedBefore);
    expect(secondaries.map(([n, kind]) => merkleEvents(n, kind))).toEqual(merkleBefore);
  });
});

describe('a secondary moved to another primary cluster never goes back to the one it left (issue 26 item 7)', () => {
  const nodes: TestNode[] = [];
  const proxies: TcpProxy[] = [];
  afterEach(async () => {
    for (const n of nodes.splice(0).reverse()) await n.stop();
    for (const x of proxies.splice(0)) await x.close();
  });

  /**
   * The old primary cluster: one node advertising two addresses (proxies in front of its one port,
   * as HA membership gives), a performance secondary streaming from it that knows both, and a DR
   * secondary behind a proxy of its own, promoted: the new primary cluster, with the same
   * performance secondary set (what update-primary by token or by address moves to). The old node
   * is never demoted.
   */
  async function moved(): Promise<{ old: TestNode; perf: TestNode; promoted: TestNode; a: TcpProxy; b: TcpProxy; c: TcpProxy }> {
    const port = await freePort();
    const drPort = await freePort();
    const old = await startTestNode({ clusterAddr: `127.0.0.1:${port}` });
    const perf = await startTestNode();
    const dr = await startTestNode({ clusterAddr: `127.0.0.1:${drPort}` });
    nodes.push(old, perf, dr);
    const a = await startTcpProxy(`127.0.0.1:${port}`);
    const b = await startTcpProxy(`127.0.0.1:${port}`);
    const c = await startTcpProxy(`127.0.0.1:${drPort}`);
    proxies.push(a, b, c);
    old.node.replication.advertiseClusterAddrs(() => [a.address, b.address]);
    dr.node.replication.advertiseClusterAddrs(() => [c.address]);
    await enablePrimary(old.apiAddr, old.rootToken, a.address, 'dr');
    await enablePrimary(old.apiAddr, old.rootToken, a.address, 'performance');
    await joinSecondary(old, perf, 'perf-east', 'performance');
    await joinSecondary(old, dr, 'dr-east', 'dr');
    await eventually(async () => expect((await replStatus(perf, 'performance')).known_primary_cluster_addrs).toEqual([vaultClusterAddr(a.address), vaultClusterAddr(b.address)]));
    await eventually(async () => expect((await replStatus(dr, 'dr')).last_wal).toBe((await replStatus(old, 'dr')).last_wal));
    const op = await drOperationToken(dr, old.unsealKeys.slice(0, 2));
    const r = await dr.call('POST', `${DR}/secondary/promote`, { dr_operation_token: op, primary_cluster_addr: c.address }, { token: null });
    expect({ status: r.status, body: r.body }).toEqual({ status: 204, body: r.body });
    return { old, perf, promoted: dr, a, b, c };
  }

  /**
   * The secondary streams from `to` and knows only it; then `to` dies and the secondary's
   * replication restarts (as a restart inside the old addresses' ageing window would): it retries
   * `to` alone and never dials `a` or `b`.
   */
  async function expectNeverBack(perf: TestNode, to: TcpProxy, a: TcpProxy, b: TcpProxy): Promise<void> {
    await eventually(async () => expect((await replStatus(perf, 'performance')).connection_state).toBe('ready'));
    expect({ known: (await replStatus(perf, 'performance')).known_primary_cluster_addrs, a: a.address, b: b.address }).toEqual({ known: [vaultClusterAddr(to.address)], a: a.address, b: b.address });
    const before = [a.stats().forwarded, b.stats().forwarded];
    to.cut();
    await perf.node.replication.stop();
    await perf.node.replication.start();
    await eventually(() => expect(to.stats().refused).toBeGreaterThanOrEqual(3));
    expect([a.stats().forwarded, b.stats().forwarded]).toEqual(before);
    expect(perf.node.replication.drivers.performance.material.secondary?.knownPrimaryClusterAddrs).toEqual([to.address]);
  }

  test('update-primary by token to the promoted DR cluster: the old addresses are forgotten at once, and a restart dials none of them', async () => {
    const { old, perf, promoted, a, b, c } = await moved();
    const token = await secondaryToken(promoted.apiAddr, old.rootToken, 'perf-east-moved', undefined, 'performance');
    const up = await perf.call('POST', `${PERF}/secondary/update-primary`, { token });
    expect({ status: up.status, body: up.body }).toEqual({ status: 204, body: up.body });
    await expectNeverBack(perf, c, a, b);
  });

  test('update-primary by address to the promoted DR cluster: the list is the address given, and a restart dials none of the old ones', async () => {
    const { perf, a, b, c } = await moved();
    const r = await perf.call('POST', `${PERF}/secondary/update-primary`, { update_primary_addrs: [c.address] });
    expect([200, 204]).toContain(r.status);
    await expectNeverBack(perf, c, a, b);
  });
});
