/**
 * Test support for the replication channel: mTLS material from a real replication CA, a
 * hand-written PrimaryService that records every call and answers with fixed values, and a
 * poll-with-deadline helper.
 *
 *   const pki = await makePki(['s1', 's2']);
 *   const fake = new FakePrimary();
 *   const server = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service: fake });
 *   const client = connectPrimary({ address: server.address, tls: pki.clientTls('s1') });
 */
import { setTimeout as delay } from 'node:timers/promises';
import { PermissionDenied } from '../../../core/errors.js';
import { createCa, issueLeaf, type LeafMaterial } from '../../../replication/index.js';
import type {
  BootstrapInfo,
  BootstrapRequest,
  ClusterCall,
  ForwardReply,
  ForwardRequest,
  Guard,
  HeartbeatReply,
  HeartbeatRequest,
  KeyValue,
  LeafInfo,
  Peer,
  PingInfo,
  PrimaryService,
  SnapshotInfo,
  StreamSink,
  TlsMaterial,
} from '../../../replication/index.js';

export const SERVER_NAME = 'primary.cluster-1';

export interface Pki {
  readonly serverTls: TlsMaterial;
  readonly leaves: ReadonlyMap<string, LeafMaterial>;
  clientTls(id: string): TlsMaterial;
}

/** A CA, the server leaf `serverName`, and one client leaf per id. */
export async function makePki(ids: readonly string[], clusterId = 'cluster-1', serverName = SERVER_NAME): Promise<Pki> {
  const now = Date.now();
  const ca = await createCa({ clusterId, now });
  const server = await issueLeaf(ca, { name: serverName, usage: 'server', ttlDays: 1, now });
  const leaves = new Map<string, LeafMaterial>();
  for (const id of ids) leaves.set(id, await issueLeaf(ca, { name: id, usage: 'client', ttlDays: 1, now }));
  return {
    serverTls: { caPem: ca.certPem, certPem: server.certPem, keyPem: server.keyPem, serverName },
    leaves,
    clientTls(id) {
      const leaf = leaves.get(id);
      if (!leaf) throw new Error(`no leaf for ${id}`);
      return { caPem: ca.certPem, certPem: leaf.certPem, keyPem: leaf.keyPem, serverName };
    },
  };
}

export type RecordedCall = { readonly method: string; readonly peer?: Peer; readonly args: readonly unknown[] };

/**
 * Records calls and answers with the fields below (tests overwrite them). `onStream` decides what
 * a StreamWal call does with its sink; by default it sends nothing and keeps the stream open.
 */
export class FakePrimary implements PrimaryService {
  readonly calls: RecordedCall[] = [];
  readonly authorized: Peer[] = [];
  readonly sinks = new Map<string, StreamSink>();
  refused = new Set<string>();
  pingInfo: PingInfo = { clusterId: 'cluster-1', nodeId: 'n1', version: '0.1.0', mode: 'primary', apiAddr: 'https://a:8200', clusterAddr: 'b:8201' };
  onBootstrap: (req: BootstrapRequest) => Promise<BootstrapInfo> = async () => ({
    clusterId: 'cluster-1',
    version: '0.1.0',
    primaryClusterAddr: '10.0.0.1:8201',
    primaryApiAddr: 'https://10.0.0.1:8200',
    lastWal: 2n ** 63n + 5n,
    epoch: 7,
  });
  onHeartbeat: (req: HeartbeatRequest) => Promise<HeartbeatReply> = async (req) => ({
    lastWal: req.applied.index + 1n,
    lastCommitTimeMs: 1_700_000_000_123,
    receivedAtMs: req.sentAtMs + 1,
    sentAtMs: req.sentAtMs + 2,
  });
  onOpenSnapshot: () => Promise<SnapshotInfo> = async () => ({
    snapshotId: 'snap-1',
    guard: { index: 2n ** 60n, hash: Buffer.alloc(32, 0xab) },
    root: Buffer.alloc(32, 1),
    subtreeRoots: [Buffer.alloc(32, 2), Buffer.alloc(32, 3)],
  });
  onCloseSnapshot: (id: string) => Promise<void> = async () => {};
  onStream: (peer: Peer, req: { guard: Guard; maxBatchEntries: number }, sink: StreamSink) => void = () => {};

  /** Which call each authorize() was for, in order. */
  readonly authorizedCalls: ClusterCall[] = [];

  authorize(peer: Peer, call: ClusterCall): void {
    this.authorized.push(peer);
    this.authorizedCalls.push(call);
    if (this.refused.has(peer.secondaryId)) throw new PermissionDenied(`secondary ${peer.secondaryId} is revoked`);
  }
  async ping(peer: Peer): Promise<PingInfo> {
    this.calls.push({ method: 'ping', peer, args: [] });
    return this.pingInfo;
  }
  async bootstrap(peer: Peer, req: BootstrapRequest): Promise<BootstrapInfo> {
    this.calls.push({ method: 'bootstrap', peer, args: [req] });
    return this.onBootstrap(req);
  }
  streamWal(peer: Peer, req: { guard: Guard; maxBatchEntries: number }, sink: StreamSink): void {
    this.calls.push({ method: 'streamWal', peer, args: [req] });
    this.sinks.set(peer.secondaryId, sink);
    this.onStream(peer, req, sink);
  }
  async heartbeat(peer: Peer, req: HeartbeatRequest): Promise<HeartbeatReply> {
    this.calls.push({ method: 'heartbeat', peer, args: [req] });
    return this.onHeartbeat(req);
  }
  async openSnapshot(peer: Peer): Promise<SnapshotInfo> {
    this.calls.push({ method: 'openSnapshot', peer, args: [] });
    return this.onOpenSnapshot();
  }
  async closeSnapshot(peer: Peer, snapshotId: string): Promise<void> {
    this.calls.push({ method: 'closeSnapshot', peer, args: [snapshotId] });
    return this.onCloseSnapshot(snapshotId);
  }
  async pageHashes(peer: Peer, snapshotId: string, tree: 1 | 2): Promise<Buffer[]> {
    this.calls.push({ method: 'pageHashes', peer, args: [snapshotId, tree] });
    return [Buffer.alloc(32, tree), Buffer.alloc(0), Buffer.from('ff', 'hex')];
  }
  async subpageHashes(peer: Peer, snapshotId: string, tree: 1 | 2, page: number): Promise<Buffer[]> {
    this.calls.push({ method: 'subpageHashes', peer, args: [snapshotId, tree, page] });
    return [Buffer.alloc(32, page % 256)];
  }
  async leaves(peer: Peer, snapshotId: string, tree: 1 | 2, page: number, subpages: readonly number[]): Promise<LeafInfo[]> {
    this.calls.push({ method: 'leaves', peer, args: [snapshotId, tree, page, subpages] });
    return subpages.map((s) => ({ key: `k/${page}/${s}/é`, valueHash: Buffer.alloc(32, s), subpage: s }));
  }
  async fetchValues(peer: Peer, snapshotId: string, keys: readonly string[]): Promise<KeyValue[]> {
    this.calls.push({ method: 'fetchValues', peer, args: [snapshotId, keys] });
    return keys.map((key) => ({ key, value: key.startsWith('gone') ? undefined : Buffer.from(`v:${key}`) }));
  }
  onForward: (req: ForwardRequest) => Promise<ForwardReply> = async (req) => ({
    kind: 'envelope',
    status: 200,
    body: { data: { echoed: req.body, path: req.path }, warnings: [] },
    commitIndex: 2n ** 63n + 1n,
  });
  async forward(peer: Peer, req: ForwardRequest): Promise<ForwardReply> {
    this.calls.push({ method: 'forward', peer, args: [req] });
    return this.onForward(req);
  }

  methods(): string[] {
    return this.calls.map((c) => c.method);
  }
}

/** Retries `fn` until it stops throwing; rethrows its last error after `timeoutMs`. */
export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 3_000, intervalMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() + intervalMs > deadline) throw e;
    }
    await delay(intervalMs);
  }
}

/** A promise and the function that settles it. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
