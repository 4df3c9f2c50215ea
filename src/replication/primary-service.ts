/**
 * What a primary serves on its cluster port: the WAL stream (pushed as entries commit, batched
 * when a secondary is behind, with backpressure from the transport), heartbeats, and read-only
 * Merkle access to pinned snapshots for reconciliation. Secondary bookkeeping (who is connected,
 * their applied guard, clock skew) lives here too, for the status endpoint.
 *
 *   const svc = new PrimaryStreamer({ engine, registry, info, now });
 *   await serveReplication({ address, tls, service: svc });
 */
import { randomUUID } from 'node:crypto';
import { InvalidRequest, TesseraError, ErrorCode } from '../core/errors.js';
import { compareVersions, VERSION } from '../core/version.js';
import type { PinnedSnapshot } from '../storage/merkle-view.js';
import type { StorageEngine } from '../storage/engine.js';
import type {
  BootstrapInfo, BootstrapRequest, Guard, HeartbeatReply, HeartbeatRequest, KeyValue, LeafInfo, Peer, PingInfo,
  PrimaryService, SnapshotInfo, StreamSink,
} from './transport.js';

/** Refused handshake: the primary runs a newer version than the secondary (spec section 9). */
export class VersionRefused extends TesseraError {
  constructor(primary: string, secondary: string) {
    super(ErrorCode.unavailable, `primary runs ${primary} but this secondary runs ${secondary}: upgrade the secondary first (downstream clusters must never run older versions than their primary)`);
  }
}

export interface SecondaryRegistry {
  /** Throws PermissionDenied unless `id` holds an active, unrevoked certificate with this fingerprint. */
  check(id: string, fingerprint: string): void;
}

export interface PrimaryInfo {
  clusterId(): string;
  nodeId(): string;
  apiAddr(): string;
  clusterAddr(): string;
}

/** What the primary knows about one connected secondary, from its heartbeats. */
export interface SecondaryView {
  readonly id: string;
  apiAddr: string;
  clusterAddr: string;
  lastHeartbeatMs: number;
  heartbeatDurationMs: number;
  clockSkewMs: number;
  applied: Guard;
  state: string;
  streams: number;
  /** Age of the oldest entry this secondary has not applied, as of its last heartbeat. */
  lagMs: number;
}

const HEARTBEAT_MS = 1000;
const MAX_BATCH = 512;
const MAX_BATCH_BYTES = 4 * 1024 * 1024;

export class PrimaryStreamer implements PrimaryService {
  readonly secondaries = new Map<string, SecondaryView>();
  private readonly snapshots = new Map<string, { snap: PinnedSnapshot; owner: string; timer: NodeJS.Timeout }>();
  private lastCommitMs = 0;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly o: {
      engine: StorageEngine;
      registry: SecondaryRegistry;
      info: PrimaryInfo;
      now?: () => number;
      kind: 'dr' | 'performance';
      /** After a secondary's handshake succeeds (its first one activates its token). */
      onBootstrap?: (secondaryId: string) => Promise<void>;
    },
  ) {
    this.unsubscribe = o.engine.onCommit(() => {
      this.lastCommitMs = this.now();
    });
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  authorize(peer: Peer): void {
    this.o.registry.check(peer.secondaryId, peer.fingerprint);
  }

  async ping(): Promise<PingInfo> {
    return { clusterId: this.o.info.clusterId(), nodeId: this.o.info.nodeId(), version: VERSION, mode: 'primary', apiAddr: this.o.info.apiAddr(), clusterAddr: this.o.info.clusterAddr() };
  }

  async bootstrap(peer: Peer, req: BootstrapRequest): Promise<BootstrapInfo> {
    if (req.kind !== this.o.kind) throw new InvalidRequest(`this cluster is a ${this.o.kind} primary, not ${req.kind}`);
    if (compareVersions(VERSION, req.version) > 0) throw new VersionRefused(VERSION, req.version);
    const view = this.view(peer.secondaryId);
    view.apiAddr = req.apiAddr;
    view.clusterAddr = req.clusterAddr;
    await this.o.onBootstrap?.(peer.secondaryId);
    return {
      clusterId: this.o.info.clusterId(),
      version: VERSION,
      primaryClusterAddr: this.o.info.clusterAddr(),
      primaryApiAddr: this.o.info.apiAddr(),
      lastWal: this.o.engine.lastGuard().index,
      epoch: this.o.engine.epoch(),
    };
  }

  private view(id: string): SecondaryView {
    let v = this.secondaries.get(id);
    if (!v) {
      v = { id, apiAddr: '', clusterAddr: '', lastHeartbeatMs: 0, heartbeatDurationMs: 0, clockSkewMs: 0, applied: { index: 0n, hash: Buffer.alloc(32) }, state: 'idle', streams: 0, lagMs: 0 };
      this.secondaries.set(id, v);
    }
    return v;
  }

  /** Forget a secondary (revoked or its token reissued). */
  forget(id: string): void {
    this.secondaries.delete(id);
    for (const [sid, s] of this.snapshots) if (s.owner === id) void this.closeSnapshot({ secondaryId: id, fingerprint: '', address: '' }, sid);
  }

  streamWal(peer: Peer, req: { guard: Guard; maxBatchEntries: number }, sink: StreamSink): void {
    void this.runStream(peer, req, sink).catch((e: unknown) => {
      if (!sink.closed) sink.fail(e instanceof Error ? e : new Error(String(e)));
    });
  }

  private async runStream(peer: Peer, req: { guard: Guard; maxBatchEntries: number }, sink: StreamSink): Promise<void> {
    const engine = this.o.engine;
    const last = engine.lastGuard();
    const first = engine.firstRetainedIndex();
    const lastWal = last.index;
    // The guard names one exact history: entries follow only if we hold entry i with that hash.
    if (req.guard.index > last.index) {
      await sink.send({ type: 'start', outcome: 'non_matching_guard', firstRetained: first, lastWal });
      return sink.end();
    }
    const ours = await engine.hashAt(req.guard.index);
    if (ours === undefined) {
      await sink.send({ type: 'start', outcome: 'not_retained', firstRetained: first, lastWal });
      return sink.end();
    }
    if (!ours.equals(req.guard.hash)) {
      await sink.send({ type: 'start', outcome: 'non_matching_guard', firstRetained: first, lastWal });
      return sink.end();
    }
    await sink.send({ type: 'start', outcome: 'ok', firstRetained: first, lastWal });

    const view = this.view(peer.secondaryId);
    view.streams++;
    let next = req.guard.index + 1n;
    let wake: (() => void) | undefined;
    const unsubscribe = engine.onCommit(() => wake?.());
    sink.onClose(() => wake?.());
    const maxBatch = Math.max(1, Math.min(req.maxBatchEntries || MAX_BATCH, MAX_BATCH));
    try {
      while (!sink.closed) {
        if (next > engine.lastGuard().index) {
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, HEARTBEAT_MS);
            wake = () => {
              clearTimeout(t);
              resolve();
            };
          });
          wake = undefined;
          if (sink.closed) break;
          if (next > engine.lastGuard().index) {
            await sink.send({ type: 'heartbeat', lastWal: engine.lastGuard().index, lastCommitTimeMs: this.lastCommitMs, sentAtMs: this.now() });
          }
          continue;
        }
        // Throws WalNotRetained if the bound dropped what this secondary needs: it reconnects and reconciles.
        const entries = await engine.readWal(next, maxBatch, MAX_BATCH_BYTES);
        await sink.send({ type: 'batch', entries, primaryLastWal: engine.lastGuard().index, primaryCommitTimeMs: this.lastCommitMs });
        next = (entries.at(-1)?.index ?? next - 1n) + 1n;
      }
    } finally {
      unsubscribe();
      view.streams--;
    }
    if (!sink.closed) sink.end();
  }

  async heartbeat(peer: Peer, req: HeartbeatRequest): Promise<HeartbeatReply> {
    const received = this.now();
    const view = this.view(peer.secondaryId);
    view.lastHeartbeatMs = received;
    view.applied = req.applied;
    view.state = req.state;
    view.apiAddr = req.apiAddr || view.apiAddr;
    view.clusterAddr = req.clusterAddr || view.clusterAddr;
    // One-way estimate; the secondary refines it with the round trip it measures.
    view.clockSkewMs = req.sentAtMs - received;
    const next = req.applied.index + 1n;
    if (next <= this.o.engine.lastGuard().index) {
      const [entry] = await this.o.engine.readWal(next, 1).catch(() => []);
      view.lagMs = entry ? Math.max(0, received - entry.time) : view.lagMs;
    } else {
      view.lagMs = 0;
    }
    return { lastWal: this.o.engine.lastGuard().index, lastCommitTimeMs: this.lastCommitMs, receivedAtMs: received, sentAtMs: this.now() };
  }

  async openSnapshot(peer: Peer): Promise<SnapshotInfo> {
    const snap = await this.o.engine.snapshot();
    const id = randomUUID();
    // A snapshot abandoned by a crashed secondary is closed after ten minutes.
    const timer = setTimeout(() => void this.closeSnapshot(peer, id), 600_000);
    timer.unref();
    this.snapshots.set(id, { snap, owner: peer.secondaryId, timer });
    return { snapshotId: id, guard: snap.guard, root: snap.merkleRoot(), subtreeRoots: [snap.subtreeRoot(1), snap.subtreeRoot(2)] };
  }

  private snap(peer: Peer, id: string): PinnedSnapshot {
    const s = this.snapshots.get(id);
    if (!s || s.owner !== peer.secondaryId) throw new InvalidRequest(`unknown snapshot ${id.slice(0, 40)}`);
    return s.snap;
  }

  async closeSnapshot(_peer: Peer, snapshotId: string): Promise<void> {
    const s = this.snapshots.get(snapshotId);
    if (!s) return;
    this.snapshots.delete(snapshotId);
    clearTimeout(s.timer);
    await s.snap.close();
  }

  async pageHashes(peer: Peer, id: string, tree: 1 | 2): Promise<Buffer[]> {
    return this.snap(peer, id).pageHashes(tree);
  }

  async subpageHashes(peer: Peer, id: string, tree: 1 | 2, page: number): Promise<Buffer[]> {
    return this.snap(peer, id).subpageHashes(tree, page);
  }

  async leaves(peer: Peer, id: string, tree: 1 | 2, page: number, subpages: readonly number[]): Promise<LeafInfo[]> {
    const snap = this.snap(peer, id);
    const out: LeafInfo[] = [];
    for (const s of subpages) for (const l of await snap.leaves(tree, page, s)) out.push({ key: l.key, valueHash: l.valueHash, subpage: s });
    return out;
  }

  async fetchValues(peer: Peer, id: string, keys: readonly string[]): Promise<KeyValue[]> {
    const snap = this.snap(peer, id);
    if (keys.length > 10_000) throw new InvalidRequest('at most 10000 keys per fetch');
    return Promise.all(keys.map(async (key) => ({ key, value: await snap.readRaw(key) })));
  }

  async close(): Promise<void> {
    this.unsubscribe();
    for (const id of [...this.snapshots.keys()]) await this.closeSnapshot({ secondaryId: '', fingerprint: '', address: '' }, id);
  }
}

