/**
 * What a primary serves on its cluster port: the WAL stream (pushed as entries commit, batched
 * when a secondary is behind, with backpressure from the transport), heartbeats, and read-only
 * Merkle access to pinned snapshots for reconciliation. Every call passes the kind's serve policy
 * (serve-policy.ts): identity, registry status and the key classes its kind replicates. What the
 * primary knows of each secondary lives in SecondaryViews, for status and for the demote drain.
 * This file serves the handshake, the WAL stream and heartbeats; the pinned snapshots of
 * reconciliation are reconcile-snapshots.ts, the drain and applied-index waits applied-waits.ts,
 * its options primary-options.ts.
 *
 *   const svc = new PrimaryStreamer({ engine, registry, info, kind: 'dr', now });
 *   await serveReplication({ address, tls, service: svc });
 *   const report = await svc.drain({ timeoutMs: 30_000 });   // demote: after engine.fence()
 */
import { Internal, InvalidRequest, TesseraError, ErrorCode, Unavailable } from '../core/errors.js';
import { touchesCatalog, type KeyFilter } from '../core/paths-filter.js';
import { KIND_POLICY } from '../core/replication/index.js';
import type { WalEntry } from '../core/wal.js';
import { compareVersions, VERSION } from '../core/version.js';
import { AppliedWaits, type DrainReport } from './applied-waits.js';
import { advertisedAddrs } from './primary-addrs.js';
import type { PrimaryStreamerOptions } from './primary-options.js';
import { CatchUpHolds } from './catch-up-holds.js';
import { SecondaryViews, type SecondaryView } from './secondary-views.js';
import { ReconcileSnapshots } from './reconcile-snapshots.js';
import { servePolicy, type ServePolicy } from './serve-policy.js';
import { filteredRootToVerify, rootToVerify } from './verification.js';
import { filterChangedIn } from './paths-filters.js';
import { filterEntries, withDynamicFilter, type FilterSource } from './filtered-view.js';
import type {
  BootstrapInfo, BootstrapRequest, ClusterCall, ForwardReply, ForwardRequest, Guard, HeartbeatReply, HeartbeatRequest, KeyValue, LeafInfo, Peer, PingInfo,
  PrimaryService, SnapshotInfo, StreamSink,
} from './transport.js';

export type { SecondaryView } from './secondary-views.js';
export { MAX_OPEN_SNAPSHOTS } from './reconcile-snapshots.js';
export type { DrainReport } from './applied-waits.js';

/** Refused handshake: the primary runs a newer version than the secondary (spec section 9). */
export class VersionRefused extends TesseraError {
  constructor(primary: string, secondary: string) {
    super(ErrorCode.unavailable, `primary runs ${primary} but this secondary runs ${secondary}: upgrade the secondary first (downstream clusters must never run older versions than their primary)`);
  }
}

export type { FilterSource } from './filtered-view.js';
export type { PrimaryInfo, PrimaryStreamerOptions, SecondaryRegistry } from './primary-options.js';

/** An address a secondary reports about itself, as status shows it: bounded, never trusted. */
const reported = (addr: string): string => addr.slice(0, 256);

/** How long a stream that told its secondary to reconcile waits for it to hang up. */
const RECONCILE_HANDOFF_MS = 30_000;
const HEARTBEAT_MS = 1000;
const MAX_BATCH = 512;
const MAX_BATCH_BYTES = 4 * 1024 * 1024;

export class PrimaryStreamer implements PrimaryService {
  readonly views: SecondaryViews;
  /** WAL kept for secondaries catching up after a reconcile (catch-up-holds.ts). */
  readonly holds: CatchUpHolds;
  /** The kind's policy without a paths filter (calls that serve no keys). */
  private readonly policy: ServePolicy;
  /** Pinned snapshots secondaries reconcile against. */
  private readonly reconcile: ReconcileSnapshots;
  private lastCommitMs = 0;
  private readonly unsubscribe: () => void;
  /** Wakes every open stream's wait (drain starts, or the server closes). */
  private readonly wakers = new Set<() => void>();
  /** Demote's drain and waits for secondaries to apply an index (applied-waits.ts). */
  private readonly waits: AppliedWaits;

  constructor(
    private readonly o: PrimaryStreamerOptions,
  ) {
    this.policy = servePolicy(o.kind);
    this.views = new SecondaryViews({
      now: () => this.now(),
      ...(o.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: o.heartbeatTimeoutMs } : {}),
      ...(o.lastSeen ? { lastSeen: o.lastSeen } : {}),
      ...(o.onPersistError ? { onPersistError: o.onPersistError } : {}),
    });
    this.holds = new CatchUpHolds({ engine: o.engine });
    this.waits = new AppliedWaits({
      views: this.views,
      now: () => this.now(),
      lastWal: () => o.engine.lastGuard().index,
      wakeStreams: () => {
        for (const w of [...this.wakers]) w();
      },
    });
    this.reconcile = new ReconcileSnapshots({ engine: o.engine, holds: this.holds, policy: this.policy, policyWith: (kf) => this.policyWith(kf), filters: () => this.filters });
    this.unsubscribe = o.engine.onCommit((last) => {
      this.lastCommitMs = this.now();
      // A secondary that had everything now lacks this commit's first entry: its lag counts from here.
      for (const v of this.views.all()) if (v.missingSinceMs === 0 && v.applied.index < last) v.missingSinceMs = this.lastCommitMs;
    });
  }

  /** A demote's drain started: streams say the index is final. */
  private get draining(): boolean {
    return this.waits.draining;
  }

  /** The highest index a caller of `waitApplied` waits for secondaries to confirm. */
  private get ackWanted(): bigint {
    return this.waits.ackWanted;
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** The paths filters, where this kind applies them. */
  private get filters(): FilterSource | undefined {
    return KIND_POLICY[this.o.kind].filters ? this.o.pathsFilter : undefined;
  }

  /** One secondary's key filter as of now (undefined: none, or a kind without filters). */
  private async keyFilterOf(secondaryId: string): Promise<KeyFilter | undefined> {
    return this.filters?.keyFilter(secondaryId);
  }

  /** The policy for one secondary: its kind's classes, narrowed by its paths filter if any. */
  private policyWith(kf: KeyFilter | undefined): ServePolicy {
    return kf ? servePolicy(this.o.kind, kf.keyAllowed) : this.policy;
  }

  /**
   * The last heartbeats persisted before a restart, of the ids that are still `member`s of this
   * set, with the applied index each reported; a secondary that lacked entries then is missing
   * them since the first one's commit (the oldest retained one's, when that is gone: a lower bound).
   */
  async load(member?: (id: string) => boolean): Promise<void> {
    await this.views.load(member);
    const engine = this.o.engine;
    for (const v of this.views.all()) {
      if (v.recordedApplied === undefined || v.missingSinceMs !== 0 || v.recordedApplied >= engine.lastGuard().index) continue;
      const next = v.recordedApplied + 1n;
      const first = engine.firstRetainedIndex();
      const [entry] = await engine.readWal(next < first ? first : next, 1).catch(() => []);
      if (entry !== undefined) v.missingSinceMs = entry.time;
    }
  }

  get secondaries(): ReadonlyMap<string, SecondaryView> {
    return new Map(this.views.all().map((v) => [v.id, v]));
  }

  /** Identity, registry status and kind, on every call (the kind: this server's CA and registry). */
  authorize(peer: Peer, call: ClusterCall): void {
    this.policy.admitCall(this.o.registry.check(peer.secondaryId, peer.fingerprint), call);
  }

  /** Every node's cluster address, the one secondaries are told first (primary-addrs.ts). */
  private clusterAddrs(): string[] {
    const info = this.o.info;
    return advertisedAddrs(info.clusterAddr(), info.clusterAddrs?.());
  }

  async ping(_peer: Peer): Promise<PingInfo> {
    const info = this.o.info;
    return { clusterId: info.clusterId(), nodeId: info.nodeId(), version: VERSION, mode: 'primary', apiAddr: info.apiAddr(), clusterAddr: info.clusterAddr(), clusterAddrs: this.clusterAddrs() };
  }

  async bootstrap(peer: Peer, req: BootstrapRequest): Promise<BootstrapInfo> {
    if (req.kind !== this.o.kind) throw new InvalidRequest(`this cluster is a ${this.o.kind} primary, not ${req.kind}`);
    if (compareVersions(VERSION, req.version) > 0) throw new VersionRefused(VERSION, req.version);
    const view = this.views.view(peer.secondaryId);
    view.apiAddr = reported(req.apiAddr);
    view.clusterAddr = reported(req.clusterAddr);
    view.peerAddr = peer.address;
    await this.o.onBootstrap?.(peer.secondaryId);
    return {
      clusterId: this.o.info.clusterId(),
      version: VERSION,
      primaryClusterAddr: this.o.info.clusterAddr(),
      primaryApiAddr: this.o.info.apiAddr(),
      lastWal: this.o.engine.lastGuard().index,
      epoch: this.o.engine.epoch(),
      clusterAddrs: this.clusterAddrs(),
    };
  }

  /** Forget a secondary (revoked or its token reissued). */
  forget(id: string): void {
    this.views.forget(id);
    this.holds.end(id);
    this.reconcile.forget(id);
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
    // Connected from here (before the secondary can see `ok`): the open stream is the truth, and
    // its opening is the first heartbeat.
    const ended = this.views.streamOpened(peer.secondaryId, req.guard);
    this.holds.sent(peer.secondaryId, req.guard.index);
    if (this.views.get(peer.secondaryId)?.streams === 1) this.o.emit?.('secondary-connected', { secondary_id: peer.secondaryId, applied_wal: Number(req.guard.index) });
    let kf = await this.keyFilterOf(peer.secondaryId);
    let next = req.guard.index + 1n;
    let wake: (() => void) | undefined;
    const wakeMe = (): void => wake?.();
    this.wakers.add(wakeMe);
    const unsubscribe = engine.onCommit(wakeMe);
    sink.onClose(wakeMe);
    const maxBatch = Math.max(1, Math.min(req.maxBatchEntries || MAX_BATCH, MAX_BATCH));
    // A filtered secondary's root costs a scan of every key: at most one per interval (see below).
    const filtered = { atMs: 0, costMs: 0 };
    let verifiedAtMs = 0;
    const beat = async (ack = false, idle = false): Promise<void> => {
      const verify = kf === undefined
        ? rootToVerify(engine, this.o.kind, next - 1n)
        : idle && !this.draining && this.filters
          ? await filteredRootToVerify({ engine, filters: this.filters, secondaryId: peer.secondaryId, sentThrough: next - 1n, clock: filtered, now: () => this.now(), ...(this.o.filteredVerifyMinMs !== undefined ? { minMs: this.o.filteredVerifyMinMs } : {}) })
          : undefined;
      if (verify) verifiedAtMs = this.now();
      return sink.send({
        type: 'heartbeat', lastWal: engine.lastGuard().index, lastCommitTimeMs: this.lastCommitMs, sentAtMs: this.now(),
        ...(this.draining ? { draining: true } : {}), ...(ack ? { ack: true } : {}), ...(verify ? { verify } : {}),
      });
    };
    // Everything sent up to this index is covered by an ack request already.
    let acked = req.guard.index;
    try {
      await sink.send({ type: 'start', outcome: 'ok', firstRetained: first, lastWal });
      // The secondary learns the primary's position (and clock) at once, not a second later.
      await beat(false, true);
      while (!sink.closed) {
        // Someone waits for an index this secondary has been sent: ask it to confirm at once.
        if (this.ackWanted > acked && next > this.ackWanted) {
          acked = next - 1n;
          await beat(true);
        }
        if (next > engine.lastGuard().index) {
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, this.o.heartbeatMs ?? HEARTBEAT_MS);
            wake = () => {
              clearTimeout(t);
              resolve();
            };
          });
          wake = undefined;
          if (sink.closed) break;
          if (next > engine.lastGuard().index) await beat(false, true);
          continue;
        }
        // Throws WalNotRetained if the bound dropped what this secondary needs: it reconnects and reconciles.
        let entries = await engine.readWal(next, maxBatch, MAX_BATCH_BYTES);
        // This secondary's filter changed at `cut`: what it holds was filtered otherwise, so it gets
        // the entries before the change, then is told to reconcile (its guard stays before the
        // change until the reconcile's snapshot moves it past, so a crash in between repeats this).
        const cut = this.filters ? filterChangedIn(peer.secondaryId, entries) : undefined;
        if (cut !== undefined) entries = entries.slice(0, cut);
        if (this.filters && touchesCatalog(entries.flatMap((e) => e.ops))) kf = await this.keyFilterOf(peer.secondaryId);
        if (entries.length > 0) {
          const served = this.served(entries, kf);
          // A mount or auth method came or went: the secondary's copy of its dynamic filter follows.
          if (this.filters && touchesCatalog(entries.flatMap((e) => e.ops))) withDynamicFilter(served, await this.filters.dynamicFor(peer.secondaryId));
          await sink.send({ type: 'batch', entries: served, primaryLastWal: engine.lastGuard().index, primaryCommitTimeMs: this.lastCommitMs });
          next = (entries.at(-1)?.index ?? next - 1n) + 1n;
          this.holds.sent(peer.secondaryId, next - 1n);
        }
        if (cut !== undefined) {
          await sink.send({ type: 'start', outcome: 'non_matching_guard', firstRetained: engine.firstRetainedIndex(), lastWal: engine.lastGuard().index });
          await this.untilClosed(sink, () => (wake = undefined), (w) => (wake = w));
          break;
        }
        // Draining: say the index is final as soon as this secondary has been sent everything.
        if (this.draining && next > engine.lastGuard().index) await beat();
        // Under a steady load the stream never idles for a heartbeat: when a batch leaves this
        // secondary caught up, its root goes with a beat, at most once per heartbeat interval.
        else if (kf === undefined && next > engine.lastGuard().index && this.now() - verifiedAtMs >= (this.o.heartbeatMs ?? HEARTBEAT_MS)) await beat();
      }
    } finally {
      unsubscribe();
      this.wakers.delete(wakeMe);
      ended();
      if ((this.views.get(peer.secondaryId)?.streams ?? 0) === 0) this.o.emit?.('secondary-disconnected', { secondary_id: peer.secondaryId });
    }
    if (!sink.closed) sink.end();
  }

  /** Waits (bounded) for a secondary told to reconcile to hang up; commits and close wake it. */
  private async untilClosed(sink: StreamSink, clear: () => void, set: (w: () => void) => void): Promise<void> {
    const until = this.now() + RECONCILE_HANDOFF_MS;
    while (!sink.closed && this.now() < until) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 250);
        set(() => {
          clearTimeout(t);
          resolve();
        });
      });
      clear();
    }
  }

  /**
   * What of `entries` this kind's secondary may receive. DR mirrors the WAL, so an entry holding a
   * key it may not receive is a defect (the engine never puts node-class keys in the WAL): refused.
   * A performance secondary re-commits into its own WAL and keeps the upstream guard beside it,
   * so its entries carry only the ops its class and paths filter admit (possibly none: the entry
   * is still sent, so the index sequence stays whole; the secondary does not re-verify the
   * filtered body against the entry's hash). A delete of a key of a mount the catalog no longer
   * has passes (opAllowed): a secondary never keeps a mount the primary removed.
   */
  private served(entries: readonly WalEntry[], kf: KeyFilter | undefined): WalEntry[] {
    const policy = this.policy;
    if (!KIND_POLICY[this.o.kind].filters) {
      for (const e of entries) {
        if (!e.ops.every((op) => policy.admits(op.key))) throw new Internal(`WAL entry ${e.index} holds a key ${this.o.kind} secondaries may not receive`);
      }
      return [...entries];
    }
    return filterEntries(entries, policy.admits, kf);
  }

  async heartbeat(peer: Peer, req: HeartbeatRequest): Promise<HeartbeatReply> {
    const received = this.now();
    const engine = this.o.engine;
    const next = req.applied.index + 1n;
    // The oldest entry it lacks; no longer retained: the oldest retained one, a lower bound.
    const first = engine.firstRetainedIndex();
    const from = next < first ? first : next;
    const [entry] = from <= engine.lastGuard().index ? await engine.readWal(from, 1).catch(() => []) : [];
    this.holds.progress(peer.secondaryId, req.applied.index);
    this.views.heartbeat(peer.secondaryId, (view) => {
      view.lastHeartbeatMs = received;
      view.applied = req.applied;
      view.state = req.state;
      view.apiAddr = reported(req.apiAddr) || view.apiAddr;
      view.clusterAddr = reported(req.clusterAddr) || view.clusterAddr;
      view.peerAddr = peer.address || view.peerAddr;
      // One-way estimate; the secondary refines it with the round trip it measures.
      view.clockSkewMs = req.sentAtMs - received;
      // Read after the WAL read above: an entry committed meanwhile counts from the last commit.
      view.missingSinceMs = next > engine.lastGuard().index ? 0 : (entry?.time ?? (view.missingSinceMs || this.lastCommitMs));
    });
    return { lastWal: this.o.engine.lastGuard().index, lastCommitTimeMs: this.lastCommitMs, receivedAtMs: received, sentAtMs: this.now(), clusterAddrs: this.clusterAddrs() };
  }

  /**
   * Demote's drain; call after `engine.fence()`, so the last index is final. Tells every open
   * stream the index is final and waits (bounded) until each connected secondary applied it.
   */
  drain(o: Parameters<AppliedWaits['drain']>[0]): Promise<DrainReport> {
    return this.waits.drain(o);
  }

  /** Waits (bounded) until every connected secondary has applied `index` (applied-waits.ts). */
  waitApplied(index: bigint, timeoutMs: number): Promise<boolean> {
    return this.waits.waitApplied(index, timeoutMs);
  }

  // ---- reconciliation: pinned snapshots (reconcile-snapshots.ts) ----

  openSnapshot(peer: Peer): Promise<SnapshotInfo> {
    return this.reconcile.open(peer);
  }

  closeSnapshot(peer: Peer, snapshotId: string): Promise<void> {
    return this.reconcile.close(peer, snapshotId);
  }

  pageHashes(peer: Peer, id: string, tree: 1 | 2): Promise<Buffer[]> {
    return this.reconcile.pageHashes(peer, id, tree);
  }

  subpageHashes(peer: Peer, id: string, tree: 1 | 2, page: number): Promise<Buffer[]> {
    return this.reconcile.subpageHashes(peer, id, tree, page);
  }

  leaves(peer: Peer, id: string, tree: 1 | 2, page: number, subpages: readonly number[]): Promise<LeafInfo[]> {
    return this.reconcile.leaves(peer, id, tree, page, subpages);
  }

  fetchValues(peer: Peer, id: string, keys: readonly string[]): Promise<KeyValue[]> {
    return this.reconcile.fetchValues(peer, id, keys);
  }

  /** A performance secondary's forwarded write (the serve policy admitted the call and kind). */
  async forward(peer: Peer, req: ForwardRequest): Promise<ForwardReply> {
    const execute = this.o.forwarded?.();
    if (!execute) throw new Unavailable('this primary does not execute forwarded writes yet (starting up)');
    return execute(peer.secondaryId, req);
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.holds.endAll();
    await this.views.flush();
    await this.reconcile.closeAll();
  }
}

