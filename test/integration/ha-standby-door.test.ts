/**
 * A standby of an HA primary cluster answers secondaries on its cluster port (issue 19 item 5):
 * after the same mTLS handshake and certificate checks the active node makes, every replication
 * call gets NotActiveNode (UNAVAILABLE, `tessera-active-cluster-addr: host:port`) and nothing
 * else. Real nodes in process on one PostgreSQL, real gRPC on 127.0.0.1.
 *
 * (1) A DR secondary whose activation token names only the standby's address reaches the active
 *     node through the standby's answer: it dialled the address the standby named (it knew no
 *     other). (2) The door: a revoked or foreign certificate gets from the standby exactly what it
 *     gets from the active node, and no address; a valid one gets the address and no data, and a
 *     forwarded write is not run; an HA relay to a standby is not sent. (3) update-primary given
 *     only the standby's address follows its answer too.
 */
import { jest } from '@jest/globals';
import pino from 'pino';
import { VERSION } from '../../src/core/version.js';
import { ChannelError, ChannelReason, NotActiveNode, type PrimaryClient, type TlsMaterial } from '../../src/replication/index.js';
import { loadRecord } from '../../src/replication/role-record.js';
import { loadHaTls } from '../../src/ha/tls.js';
import { connectHa, connectPrimary } from '../../src/transport/grpc/index.js';
import { makePki } from '../../src/transport/grpc/testing/fixtures.js';
import { joinSecondary } from '../harness/cluster.js';
import { activateSecondary, enablePrimary, freePorts, waitInSync } from '../harness/dr.js';
import { eventually } from '../harness/eventually.js';
import { replStatus, secondaryToken } from '../support/dr.js';
import { startHaCluster, type InProcessHaNode } from '../harness/ha.js';
import { useHarness } from '../harness/harness.js';
import { startTestNode, type TestNode as PlainNode } from '../support/in-process.js';
import { usePostgres } from '../support/postgres.js';

type TestNode = InProcessHaNode;
const h = useHarness();

jest.setTimeout(180_000);

const postgres = usePostgres();

const nodes: PlainNode[] = [];
afterAll(async () => {
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

async function isActive(n: PlainNode): Promise<boolean> {
  return (await n.call('GET', 'sys/leader', undefined, { token: null })).body.is_self === true;
}

/** The secondary's client material, as its role record holds it. */
async function secondaryTls(n: PlainNode, kind: 'dr' | 'performance'): Promise<TlsMaterial> {
  const rec = await loadRecord(n.node.core.store(), kind);
  if (!('secondary' in rec) || rec.secondary === null) throw new Error(`no ${kind} secondary material`);
  const s = rec.secondary;
  return { caPem: s.caPem, certPem: s.certPem, keyPem: s.keyPem, serverName: s.serverName };
}

/** What a call ended with: the reason, whether it named an active node, and the message. */
async function outcome(call: () => Promise<unknown>): Promise<{ reason: string; named: string | undefined; message: string } | 'answered'> {
  try {
    await call();
    return 'answered';
  } catch (e) {
    if (!(e instanceof ChannelError)) throw e;
    return { reason: e.reason, named: e instanceof NotActiveNode ? e.activeClusterAddr ?? '(none)' : undefined, message: e.message };
  }
}

describe('an HA standby on its cluster port', () => {
  let a: TestNode;
  let b: TestNode;
  let dr: PlainNode;
  let perf: PlainNode;
  let addrA: string;
  let addrB: string;
  const lines: Record<string, unknown>[] = [];
  const clients: PrimaryClient[] = [];
  const dial = (address: string, tls: TlsMaterial): PrimaryClient => {
    const c = connectPrimary({ address, tls });
    clients.push(c);
    return c;
  };
  afterAll(() => {
    for (const c of clients) c.close();
  });

  beforeAll(async () => {
    // Two HA nodes on fixed cluster addresses (test/harness/ha.ts): a is the active one, b the standby.
    const addrs = (await freePorts(2)).map((p) => `127.0.0.1:${p}`);
    const c = await startHaCluster(h, { inProcess: true, nodes: 2, postgres: postgres(), database: 'ha_door', leaseTtlMs: 5000, node: (i) => ({ clusterAddr: addrs[i]! }) });
    a = await c.active();
    [b] = (await c.standbys()) as [TestNode];
    addrA = addrs[a.index]!;
    addrB = addrs[b.index]!;
    expect(await isActive(b)).toBe(false);
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    dr = await startTestNode({ logger });
    perf = await startTestNode();
    nodes.push(dr, perf);
    expect((await a.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    await joinSecondary(a, perf, 'perf-1', 'performance');
  });

  it('a secondary told only the standby\'s address reaches the active node through the standby\'s answer', async () => {
    // The address secondaries are told (and the token carries) is the standby's.
    await enablePrimary(a.apiAddr, a.rootToken, addrB, 'dr');
    // The standby reads the kinds it answers for every 2 s (src/ha/door.ts).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await activateSecondary(dr.apiAddr, dr.rootToken, await secondaryToken(a, 'dr-1'), 'dr');
    await waitInSync(a.apiAddr, dr.apiAddr, 30_000, 'dr');
    const st = await replStatus(dr, 'dr');
    expect(st.primary_cluster_addr).toBe(`https://${addrA}`);
    expect(st.known_primary_cluster_addrs).toEqual(expect.arrayContaining([`https://${addrA}`, `https://${addrB}`]));
    // It dialled the address the standby named, the only way it could learn it before connecting.
    const jumps = lines.filter((l) => l['msg'] === 'this node of the primary cluster is a standby; dialling the active node it named');
    expect(jumps.length).toBeGreaterThan(0);
    expect(jumps[0]).toMatchObject({ from: addrB, to: addrA });
    expect(lines.filter((l) => l['msg'] === 'primary unreachable at this address; trying the next known address')).toEqual([]);
    expect(dr.node.events.history().filter((e) => e.kind === 'dr' && e.type.startsWith('merkle-'))).toEqual([]);
  });

  it('refuses a revoked or foreign certificate exactly as the active node does, naming no address', async () => {
    const drTls = await secondaryTls(dr, 'dr');
    // A valid certificate: the standby names the active node, the active node answers.
    expect(await outcome(() => dial(addrB, drTls).ping('dr-1', 5_000))).toMatchObject({ reason: ChannelReason.unavailable, named: addrA });
    expect(await outcome(() => dial(addrA, drTls).ping('dr-1', 5_000))).toBe('answered');

    // A certificate of another CA: no handshake with either node, and nothing named.
    const foreign = (await makePki(['dr-1'])).clientTls('dr-1');
    const stranger = { ...drTls, certPem: foreign.certPem, keyPem: foreign.keyPem };
    const onB = await outcome(() => dial(addrB, stranger).ping('dr-1', 3_000));
    const onA = await outcome(() => dial(addrA, stranger).ping('dr-1', 3_000));
    expect(onB).not.toBe('answered');
    expect(onA).not.toBe('answered');
    expect([typeof onB === 'string' ? onB : onB.reason, typeof onB === 'string' ? undefined : onB.named]).toEqual([typeof onA === 'string' ? onA : onA.reason, undefined]);

    // An id the active node revoked: the same refusal from both, no address.
    const revoked = await a.call('POST', 'sys/replication/dr/primary/revoke-secondary', { id: 'dr-1' });
    expect([200, 204]).toContain(revoked.status);
    const fromB = await outcome(() => dial(addrB, drTls).bootstrap({ secondaryId: 'dr-1', version: VERSION, kind: 'dr', apiAddr: '', clusterAddr: '' }, 5_000));
    const fromA = await outcome(() => dial(addrA, drTls).bootstrap({ secondaryId: 'dr-1', version: VERSION, kind: 'dr', apiAddr: '', clusterAddr: '' }, 5_000));
    expect(fromB).toEqual(fromA);
    expect(fromB).toMatchObject({ reason: ChannelReason.permissionDenied, named: undefined });
    expect(JSON.stringify(fromB)).not.toContain(addrA);
  });

  it('serves no data and runs no forwarded write; an HA relay to it is not sent', async () => {
    const perfTls = await secondaryTls(perf, 'performance');
    const client = dial(addrB, perfTls);
    const named = { reason: ChannelReason.unavailable, named: addrA };
    expect(await outcome(() => client.bootstrap({ secondaryId: 'perf-1', version: VERSION, kind: 'performance', apiAddr: '', clusterAddr: '' }, 5_000))).toMatchObject(named);
    expect(await outcome(() => client.heartbeat({ secondaryId: 'perf-1', applied: { index: 0n, hash: Buffer.alloc(32) }, sentAtMs: Date.now(), state: 'stream-wals', apiAddr: '', clusterAddr: '' }))).toMatchObject(named);
    expect(await outcome(() => client.openSnapshot('perf-1'))).toMatchObject(named);
    expect(await outcome(() => client.fetchValues('any', ['core/mounts']))).toMatchObject(named);
    // The stream ends with the same answer and carries no message.
    const received: string[] = [];
    const ended = await new Promise<Error | undefined>((resolve) => {
      client.streamWal({ secondaryId: 'perf-1', guard: { index: 0n, hash: Buffer.alloc(32) }, maxBatchEntries: 16 }, {
        onMessage: (m) => void received.push(m.type),
        onEnd: resolve,
      });
    });
    expect(received).toEqual([]);
    expect(ended).toBeInstanceOf(NotActiveNode);
    expect((ended as NotActiveNode).activeClusterAddr).toBe(addrA);
    // A forwarded write: refused with the address, and not run anywhere.
    const fwd = await outcome(() =>
      client.forward('perf-1', { requestId: 'r1', method: 'PUT', operation: 'update', namespace: '', path: 'secret/data/via-standby', trailingSlash: false, query: {}, body: { data: { v: 1 } } }, 5_000),
    );
    expect(fwd).toMatchObject(named);
    expect((await a.call('GET', 'secret/data/via-standby')).status).toBe(404);

    // HA forwarding is the active node's alone: a relay to the standby never completes a handshake.
    const haTls = await loadHaTls(a.node.core.store());
    if (haTls === undefined) throw new Error('no HA certificates');
    const relay = connectHa({ address: addrB, tls: haTls.client });
    try {
      const r = await outcome(() => relay.forward({ method: 'GET', url: '/v1/sys/health', headers: {}, body: undefined, remoteAddress: '127.0.0.1' }, 5_000));
      expect(r).toMatchObject({ reason: ChannelReason.notSent });
    } finally {
      relay.close();
    }
  });
  it('update-primary given only the standby\'s address moves the secondary to the active node it names', async () => {
    const merkle = () => perf.node.events.history().filter((e) => e.kind === 'performance' && e.type.startsWith('merkle-')).length;
    const before = merkle();
    const r = await perf.call('POST', 'sys/replication/performance/secondary/update-primary', { update_primary_addrs: [`https://${addrB}`] });
    expect(r.status).toBe(204);
    expect((await a.call('PUT', 'secret/data/after-update', { data: { v: 2 } })).status).toBe(200);
    await eventually(async () => {
      const st = await replStatus(perf, 'performance');
      expect({ at: st.primary_cluster_addr, state: st.state }).toEqual({ at: `https://${addrA}`, state: 'stream-wals' });
      expect((await perf.call('GET', 'secret/data/after-update')).body?.data?.data).toEqual({ v: 2 });
    }, { timeoutMs: 20_000 });
    expect(merkle()).toBe(before);
  });
});
