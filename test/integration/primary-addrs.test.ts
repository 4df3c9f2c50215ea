/**
 * A secondary finds its primary cluster's active node among the addresses it knows
 * (src/replication/primary-addrs.ts), over real gRPC/mTLS on 127.0.0.1: a dead address before the
 * live one costs one refused attempt, not a backoff; and when the cluster's listener moves to
 * another address (another node over the same store, as an HA takeover does), the secondary
 * learns that address from the primary's replies, follows it, and streams on from its guard
 * without a Merkle sync. A standby of the primary cluster (NotActiveNode) sends it straight to the
 * address it names, past the others.
 */
import pino from 'pino';
import { StorageEngine } from '../../src/storage/engine.js';
import { testCipher } from '../../src/storage/engine.fixtures.js';
import { MemoryBackend } from '../../src/storage/memory.js';
import type { Store } from '../../src/storage/store.js';
import { PrimaryStreamer } from '../../src/replication/primary-service.js';
import { PrimaryAddrs, type AddrsSnapshot } from '../../src/replication/primary-addrs.js';
import { SecondaryLoop } from '../../src/replication/secondary-loop.js';
import { NotActiveNode, type PrimaryService, type ReplicationServer } from '../../src/replication/transport.js';
import { connectPrimary, serveReplication } from '../../src/transport/grpc/index.js';
import { makePki, type Pki } from '../../src/transport/grpc/testing/fixtures.js';
import { freePorts } from '../harness/dr.js';
import { eventually } from '../harness/eventually.js';

const log = pino({ level: 'silent' });
const cipher = testCipher();

function primaryOf(engine: StorageEngine, addrs: () => readonly string[]): PrimaryStreamer {
  return new PrimaryStreamer({
    engine,
    kind: 'dr',
    registry: { check: () => 'active' as const },
    info: { clusterId: () => 'c1', nodeId: () => 'p', apiAddr: () => 'http://p', clusterAddr: () => addrs()[0] ?? '', clusterAddrs: addrs },
    heartbeatMs: 100,
  });
}

async function inSync(a: StorageEngine, b: StorageEngine, timeoutMs = 10_000): Promise<void> {
  await eventually(() => {
    expect(b.lastGuard().index).toBe(a.lastGuard().index);
    expect(b.merkleRoot().toString('hex')).toBe(a.merkleRoot().toString('hex'));
  }, { timeoutMs, intervalMs: 20 });
}

const put = (store: Store, key: string) => store.commit([{ type: 'put', key, value: Buffer.from(key) }]);

describe('a secondary and the addresses of its primary cluster (real gRPC)', () => {
  let pki: Pki;
  let p: StorageEngine;
  let s: StorageEngine;
  let store: Store;
  const servers: ReplicationServer[] = [];
  const loops: SecondaryLoop[] = [];
  beforeAll(async () => {
    pki = await makePki(['s1']);
  });
  beforeEach(async () => {
    p = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 10_000, walMaxBytes: 1 << 30 });
    s = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 10_000, walMaxBytes: 1 << 30 });
    store = p.secure(cipher);
    for (let i = 0; i < 20; i++) await put(store, `app/before-${i}`);
  });
  afterEach(async () => {
    for (const l of loops.splice(0)) await l.stop();
    for (const server of servers.splice(0)) await server.close();
  });

  /** `dialled` records each address the loop connects to, in order. */
  function loopOf(addrs: PrimaryAddrs, saved: AddrsSnapshot[], dialled: string[] = []): SecondaryLoop {
    const loop = new SecondaryLoop({
      engine: s, connect: (address) => (dialled.push(address), connectPrimary({ address, tls: pki.clientTls('s1') })), addrs, onAddrs: (a) => saved.push(a),
      secondaryId: 's1', kind: 'dr', apiAddr: () => 'http://s', clusterAddr: () => 's:8201', log, heartbeatMs: 100,
    });
    loops.push(loop);
    return loop;
  }

  it('skips a dead address listed before the live primary at once, and learns the addresses the primary names', async () => {
    const [deadPort, otherPort] = await freePorts(2);
    const dead = `127.0.0.1:${deadPort}`;
    let advertised: string[] = [];
    const server = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service: primaryOf(p, () => advertised) });
    servers.push(server);
    const other = `127.0.0.1:${otherPort}`;
    advertised = [server.address, other];
    const saved: AddrsSnapshot[] = [];
    const addrs = new PrimaryAddrs({ configured: dead, known: [dead, server.address] });
    const loop = loopOf(addrs, saved);
    const started = Date.now();
    loop.start();
    await inSync(p, s, 5_000);
    // One refused attempt and the next address 50 ms later: far below a backoff round.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(loop.progress.state).toBe('stream-wals');
    expect(loop.primaryAddr).toBe(server.address);
    // The primary named another node: known, and handed over to be persisted with the connected one.
    await eventually(() => expect(saved.at(-1)).toEqual({ known: [dead, server.address, other], connected: server.address }), { timeoutMs: 5_000 });
    expect(loop.progress.syncStarted).toBe(0);
  });

  /** A standby's service: every call refused with the active node's address (src/replication/standby-door.ts). */
  const standby = (active: string | undefined): PrimaryService => {
    const refuse = async (): Promise<never> => {
      throw new NotActiveNode(active);
    };
    return {
      authorize: () => undefined, ping: refuse, bootstrap: refuse, heartbeat: refuse, openSnapshot: refuse, closeSnapshot: refuse, pageHashes: refuse,
      subpageHashes: refuse, leaves: refuse, fetchValues: refuse, forward: refuse,
      streamWal: (_peer, _req, sink) => sink.fail(new NotActiveNode(active)),
    };
  };

  it('dials the active node a standby names next, past the addresses listed before it', async () => {
    const [deadPort, activePort] = await freePorts(2);
    const dead = `127.0.0.1:${deadPort}`;
    const active = `127.0.0.1:${activePort}`;
    const serverA = await serveReplication({ address: active, tls: pki.serverTls, service: primaryOf(p, () => [active]) });
    const serverB = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service: standby(active) });
    servers.push(serverA, serverB);
    // The standby first, a dead node next, the active node last: round robin would try all three.
    const addrs = new PrimaryAddrs({ configured: serverB.address, known: [serverB.address, dead, active] });
    const dialled: string[] = [];
    const loop = loopOf(addrs, [], dialled);
    loop.start();
    await inSync(p, s, 5_000);
    expect(dialled.slice(0, 2)).toEqual([serverB.address, active]);
    expect(dialled).not.toContain(dead);
    expect(loop.primaryAddr).toBe(active);
    expect(loop.progress.syncStarted).toBe(0);
  });

  it('a standby that knows no active node sends it round the list as an unreachable one would', async () => {
    const [activePort] = await freePorts(1);
    const active = `127.0.0.1:${activePort}`;
    const serverA = await serveReplication({ address: active, tls: pki.serverTls, service: primaryOf(p, () => [active]) });
    const serverB = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service: standby(undefined) });
    servers.push(serverA, serverB);
    const dialled: string[] = [];
    const loop = loopOf(new PrimaryAddrs({ configured: serverB.address, known: [serverB.address, active] }), [], dialled);
    loop.start();
    await inSync(p, s, 5_000);
    expect(dialled.slice(0, 2)).toEqual([serverB.address, active]);
  });

  it('follows the listener to another address it learned, streaming on from its guard without a Merkle sync', async () => {
    const [portA, portB] = await freePorts(2);
    const a = `127.0.0.1:${portA}`;
    const b = `127.0.0.1:${portB}`;
    // Node A serves; both nodes are members of the cluster, as an HA membership list names them.
    const members = () => [a, b];
    const serverA = await serveReplication({ address: a, tls: pki.serverTls, service: primaryOf(p, members) });
    servers.push(serverA);
    const saved: AddrsSnapshot[] = [];
    // The secondary was activated by A and knows nothing else: B comes from A's replies.
    const loop = loopOf(new PrimaryAddrs({ configured: a, known: [a] }), saved);
    loop.start();
    await inSync(p, s);
    await eventually(() => expect(loop.addrs.known).toEqual([a, b]), { timeoutMs: 5_000 });

    // A stops serving (it died or stepped down); B becomes active over the same store, with a
    // streamer of its own that knows nothing of this secondary, and writes go on meanwhile.
    await serverA.close();
    servers.splice(servers.indexOf(serverA), 1);
    for (let i = 0; i < 5; i++) await put(store, `app/between-${i}`);
    const moved = Date.now();
    const serverB = await serveReplication({ address: b, tls: pki.serverTls, service: primaryOf(p, members) });
    servers.push(serverB);
    for (let i = 0; i < 5; i++) await put(store, `app/after-${i}`);
    await inSync(p, s, 10_000);
    expect(Date.now() - moved).toBeLessThan(10_000);
    expect(loop.primaryAddr).toBe(b);
    expect(loop.progress.state).toBe('stream-wals');
    // The same WAL: the guard matched at B, no Merkle diff or sync ran.
    expect(loop.progress.syncStarted).toBe(0);
    expect(loop.progress.lastSync).toBeUndefined();
    expect(saved.at(-1)?.connected).toBe(b);
  });
});
