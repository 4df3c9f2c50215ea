/**
 * What a primary serves on its cluster port: the WAL stream (pushed as entries commit, batched
 * when a secondary is behind, with backpressure from the transport), heartbeats, and read-only
 * Merkle access to pinned snapshots for reconciliation. Every call passes the kind's serve policy
 * (serve-policy.ts): identity, registry status and the key classes its kind replicates. What the
 * primary knows of each secondary lives in SecondaryViews, for status and for the demote drain.
 *
 *   const svc = new PrimaryStreamer({ engine, registry, info, kind: 'dr', now });
 *   await serveReplication({ address, tls, service: svc });
 *   const report = await svc.drain({ timeoutMs: 30_000 });   // demote: after engine.fence()
 */
import { randomUUID } from 'node:crypto';
import { Internal, InvalidRequest, TesseraError, ErrorCode, Unavailable } from '../core/errors.js';
import type { Tree } from '../core/merkle.js';
import { touchesCatalog, type KeyFilter } from '../core/paths-filter.js';
import { KIND_POLICY, type Kind, type TokenStatus } from '../core/replication/index.js';
import type { WalEntry } from '../core/wal.js';
import { compareVersions, VERSION } from '../core/version.js';
import { treeHashes, type PinnedSnapshot } from '../storage/merkle-view.js';
import type { StorageEngine } from '../storage/engine.js';
import { CatchUpHolds } from './catch-up-holds.js';
import { SecondaryViews, type LastSeenStore, type SecondaryView } from './secondary-views.js';
import { servePolicy, type ServePolicy } from './serve-policy.js';
import { DYNAMIC_FILTER_KEY } from './applier.js';
import type { EmitEvent } from './events.js';
import { filteredRootToVerify, rootToVerify } from './verification.js';
import { filterChangedIn } from './paths-filters.js';
import { filterEntries, filteredView, servedRoot, servedTrees, withDynamicFilter, type FilteredView, type FilterSource } from './filtered-view.js';
import type {
  BootstrapInfo, BootstrapRequest, ClusterCall, ForwardReply, ForwardRequest, Guard, HeartbeatReply, HeartbeatRequest, KeyValue, LeafInfo, Peer, PingInfo,
  PrimaryService, SnapshotInfo, StreamSink,
} from './transport.js';

export type { SecondaryView } from './secondary-views.js';

/** Refused handshake: the primary runs a newer version than the secondary (spec section 9). */
export class VersionRefused extends TesseraError {
  constructor(primary: string, secondary: string) {
    super(ErrorCode.unavailable, `primary runs ${primary} but this secondary runs ${secondary}: upgrade the secondary first (downstream clusters must never run older versions than their primary)`);
  }
}

export interface SecondaryRegistry {
  /**
   * Throws PermissionDenied unless `id` holds an unrevoked, unexpired certificate with this
   * fingerprint; returns its status (the policy decides what that status may call).
   */
  check(id: string, fingerprint: string): TokenStatus;
}

export interface PrimaryInfo {
  clusterId(): string;
  nodeId(): string;
  apiAddr(): string;
  clusterAddr(): string;
}

/** How a demote's drain ended: who confirmed the final index, who did not. */
export interface DrainReport {
  readonly lastWal: bigint;
  readonly confirmed: readonly string[];
  readonly unconfirmed: readonly { readonly id: string; readonly applied: bigint }[];
  readonly timedOut: boolean;
}

export type { FilterSource } from './filtered-view.js';

/** How many pinned snapshots one secondary may hold open; opening another closes its oldest. */
export const MAX_OPEN_SNAPSHOTS = 2;

/** One secondary's pinned snapshot, and for a filtered secondary the view of it that it is served. */
interface OpenSnapshot {
  readonly snap: PinnedSnapshot;
  readonly owner: string;
  readonly timer: NodeJS.Timeout;
  readonly filter?: FilteredView;
}

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
  private readonly snapshots = new Map<string, OpenSnapshot>();
  private lastCommitMs = 0;
  private readonly unsubscribe: () => void;
  /** Wakes every open stream's wait (drain starts, or the server closes). */
  private readonly wakers = new Set<() => void>();
  private draining = false;
  /** The highest index a caller of `waitApplied` waits for secondaries to confirm. */
  private ackWanted = 0n;

  constructor(
    private readonly o: {
      engine: StorageEngine;
      registry: SecondaryRegistry;
      info: PrimaryInfo;
      now?: () => number;
      kind: Kind;
      /** After a secondary's handshake succeeds (its first one activates its token). */
      onBootstrap?: (secondaryId: string) => Promise<void>;
      /** Interval of the primary's heartbeats on an idle stream. Default 1000 ms. */
      heartbeatMs?: number;
      /** A secondary silent for longer is reported disconnected. Default 3000 ms. */
      heartbeatTimeoutMs?: number;
      /** Keeps each secondary's last heartbeat across restarts. */
      lastSeen?: LastSeenStore;
      onPersistError?: (e: unknown) => void;
      /**
       * Performance paths filters (paths-filters.ts): applied to the stream, the Merkle hashes,
       * leaves and values served each secondary. Absent, or for DR, every key of the kind's classes.
       */
      pathsFilter?: FilterSource;
      /**
       * Executes a write forwarded by a performance secondary (the vault core's dispatcher, bound
       * late by the node); absent, Forward answers Unavailable.
       */
      forwarded?: () => ((secondaryId: string, req: ForwardRequest) => Promise<ForwardReply>) | undefined;
      /** Replication events (events.ts): a secondary's first stream opened, its last one ended. */
      emit?: EmitEvent;
      /** Least time between two verification roots of a filtered secondary (a scan each). Default 10 s. */
      filteredVerifyMinMs?: number;
    },
  ) {
    this.policy = servePolicy(o.kind);
    this.views = new SecondaryViews({
      now: () => this.now(),
      ...(o.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: o.heartbeatTimeoutMs } : {}),
      ...(o.lastSeen ? { lastSeen: o.lastSeen } : {}),
      ...(o.onPersistError ? { onPersistError: o.onPersistError } : {}),
    });
    this.holds = new CatchUpHolds({ engine: o.engine });
    this.unsubscribe = o.engine.onCommit((last) => {
      this.lastCommitMs = this.now();
      // A secondary that had everything now lacks this commit's first entry: its lag counts from here.
      for (const v of this.views.all()) if (v.missingSinceMs === 0 && v.applied.index < last) v.missingSinceMs = this.lastCommitMs;
    });
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

  /** The last heartbeats persisted before a restart, of the ids that are still `member`s of this set. */
  load(member?: (id: string) => boolean): Promise<void> {
    return this.views.load(member);
  }

  get secondaries(): ReadonlyMap<string, SecondaryView> {
    return new Map(this.views.all().map((v) => [v.id, v]));
  }

  /** Identity, registry status and kind, on every call (the kind: this server's CA and registry). */
  authorize(peer: Peer, call: ClusterCall): void {
    this.policy.admitCall(this.o.registry.check(peer.secondaryId, peer.fingerprint), call);
  }

  async ping(_peer: Peer): Promise<PingInfo> {
    return { clusterId: this.o.info.clusterId(), nodeId: this.o.info.nodeId(), version: VERSION, mode: 'primary', apiAddr: this.o.info.apiAddr(), clusterAddr: this.o.info.clusterAddr() };
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
    };
  }

  /** Forget a secondary (revoked or its token reissued). */
  forget(id: string): void {
    this.views.forget(id);
    this.holds.end(id);
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
    return { lastWal: this.o.engine.lastGuard().index, lastCommitTimeMs: this.lastCommitMs, receivedAtMs: received, sentAtMs: this.now() };
  }

  /**
   * Demote's drain; call after `engine.fence()`, so the last index is final. Tells every open
   * stream the index is final and waits until each connected secondary has applied it (by its
   * heartbeats), or `timeoutMs` passes. Secondaries that are not connected are not waited for.
   */
  async drain(o: { timeoutMs: number; onProgress?: (pending: readonly { id: string; applied: bigint }[], lastWal: bigint) => void; progressEveryMs?: number }): Promise<DrainReport> {
    const lastWal = this.o.engine.lastGuard().index;
    this.draining = true;
    for (const w of [...this.wakers]) w();
    const timedOut = !(await this.untilApplied(lastWal, o.timeoutMs, o.onProgress ? (pending) => o.onProgress?.(pending, lastWal) : undefined, o.progressEveryMs));
    const confirmed = this.views.all().filter((v) => v.applied.index >= lastWal && this.views.connected(v)).map((v) => v.id).sort();
    const unconfirmed = this.views.all().filter((v) => !confirmed.includes(v.id)).map((v) => ({ id: v.id, applied: v.applied.index }));
    return { lastWal, confirmed, unconfirmed, timedOut };
  }

  /**
   * Waits until every connected secondary has applied `index`, asking each to confirm as soon as
   * it has (not at its next heartbeat), or until `timeoutMs` passes. A secondary that is not
   * connected, or stops being (its heartbeats stop for the heartbeat timeout), is not waited for:
   * this bounds the wait by a partition, like semi-synchronous replication falling back to
   * asynchronous. Resolves true when no connected secondary is behind `index`.
   */
  async waitApplied(index: bigint, timeoutMs: number): Promise<boolean> {
    if (this.behind(index).length === 0) return true;
    if (index > this.ackWanted) this.ackWanted = index;
    for (const w of [...this.wakers]) w();
    return this.untilApplied(index, timeoutMs);
  }

  /** Connected secondaries that have not applied `index`. */
  private behind(index: bigint): { id: string; applied: bigint }[] {
    return this.views
      .all()
      .filter((v) => this.views.connected(v) && v.applied.index < index)
      .map((v) => ({ id: v.id, applied: v.applied.index }));
  }

  /** The one wait of `drain` and `waitApplied`: by heartbeats (view changes), with a deadline. */
  private async untilApplied(index: bigint, timeoutMs: number, onProgress?: (pending: readonly { id: string; applied: bigint }[]) => void, progressEveryMs = 1000): Promise<boolean> {
    const deadline = this.now() + timeoutMs;
    let nextProgress = this.now();
    for (;;) {
      const pending = this.behind(index);
      const left = deadline - this.now();
      if (pending.length === 0) return true;
      if (left <= 0) return false;
      if (onProgress && this.now() >= nextProgress) {
        onProgress(pending);
        nextProgress = this.now() + progressEveryMs;
      }
      await this.views.nextChange(Math.min(left, 100));
    }
  }

  async openSnapshot(peer: Peer): Promise<SnapshotInfo> {
    // The secondary streams from the snapshot's guard once it has synced: keep those entries. Held
    // before the snapshot is taken (its guard can only be later), so commits during the pinning
    // and a filtered view's scan cannot trim them; then narrowed to the snapshot's own guard.
    this.holds.start(peer.secondaryId, this.o.engine.lastGuard().index + 1n);
    let snap: PinnedSnapshot | undefined;
    let filter: FilteredView | undefined;
    try {
      snap = await this.o.engine.snapshot();
      if (this.filters) filter = await filteredView(snap, this.filters, peer.secondaryId);
    } catch (e) {
      this.holds.end(peer.secondaryId);
      await snap?.close();
      throw e;
    }
    this.holds.start(peer.secondaryId, snap.guard.index + 1n);
    // A secondary reconciles from one snapshot at a time: a new one supersedes its older ones past
    // the cap, so a secondary (or a holder of its certificate) cannot pin storage without bound.
    const owned = [...this.snapshots].filter(([, s]) => s.owner === peer.secondaryId).map(([sid]) => sid);
    for (const sid of owned.slice(0, Math.max(0, owned.length - (MAX_OPEN_SNAPSHOTS - 1)))) await this.closeSnapshot(peer, sid);
    const id = randomUUID();
    // A snapshot abandoned by a crashed secondary is closed after ten minutes.
    const timer = setTimeout(() => void this.closeSnapshot(peer, id), 600_000);
    timer.unref();
    this.snapshots.set(id, { snap, owner: peer.secondaryId, timer, ...(filter ? { filter } : {}) });
    // Roots of subtrees this kind does not replicate are not served (empty).
    const trees = servedTrees(snap, filter);
    const root = (tree: Tree): Buffer => (this.policy.servesTree(tree) ? Buffer.from(trees[tree].root) : Buffer.alloc(0));
    return { snapshotId: id, guard: snap.guard, root: servedRoot(snap, filter), subtreeRoots: [root(1), root(2)] };
  }

  private open(peer: Peer, id: string): OpenSnapshot {
    const s = this.snapshots.get(id);
    if (!s || s.owner !== peer.secondaryId) throw new InvalidRequest(`unknown snapshot ${id.slice(0, 40)}`);
    return s;
  }

  /** Hashes of a snapshot as its secondary is served it (tree 1 filtered for a filtered one). */
  private hashesOf(peer: Peer, id: string, of: (trees: ReturnType<typeof servedTrees>) => Buffer[]): Buffer[] {
    const s = this.open(peer, id);
    return of(servedTrees(s.snap, s.filter));
  }


  async closeSnapshot(_peer: Peer, snapshotId: string): Promise<void> {
    const s = this.snapshots.get(snapshotId);
    if (!s) return;
    this.snapshots.delete(snapshotId);
    clearTimeout(s.timer);
    await s.snap.close();
  }

  async pageHashes(peer: Peer, id: string, tree: 1 | 2): Promise<Buffer[]> {
    this.policy.admitTree(tree);
    return this.hashesOf(peer, id, (t) => treeHashes.pageHashes(t, tree));
  }

  async subpageHashes(peer: Peer, id: string, tree: 1 | 2, page: number): Promise<Buffer[]> {
    this.policy.admitTree(tree);
    return this.hashesOf(peer, id, (t) => treeHashes.subpageHashes(t, tree, page));
  }

  async leaves(peer: Peer, id: string, tree: 1 | 2, page: number, subpages: readonly number[]): Promise<LeafInfo[]> {
    this.policy.admitTree(tree);
    const s = this.open(peer, id);
    const policy = this.policyWith(s.filter?.keys);
    const out: LeafInfo[] = [];
    for (const sp of subpages) for (const l of await s.snap.leaves(tree, page, sp)) if (policy.admits(l.key)) out.push({ key: l.key, valueHash: l.valueHash, subpage: sp });
    return out;
  }

  /**
   * The values of `keys` as of the snapshot. A performance secondary may also ask for
   * DYNAMIC_FILTER_KEY: its dynamic filter as of the snapshot (plaintext JSON, not stored here).
   */
  async fetchValues(peer: Peer, id: string, keys: readonly string[]): Promise<KeyValue[]> {
    const s = this.open(peer, id);
    if (keys.length > 10_000) throw new InvalidRequest('at most 10000 keys per fetch');
    const dynamic = this.filters ? (s.filter?.dynamic ?? { dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] }) : undefined;
    const data = dynamic ? keys.filter((k) => k !== DYNAMIC_FILTER_KEY) : keys;
    // All or nothing: one key outside the kind's classes (node class above all) refuses the call.
    this.policyWith(s.filter?.keys).admitKeys(data);
    return Promise.all(keys.map(async (key) => ({ key, value: dynamic && key === DYNAMIC_FILTER_KEY ? Buffer.from(JSON.stringify(dynamic)) : await s.snap.readRaw(key) })));
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
    for (const id of [...this.snapshots.keys()]) await this.closeSnapshot({ secondaryId: '', fingerprint: '', address: '' }, id);
  }
}

