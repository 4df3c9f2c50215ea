/**
 * A secondary's replication loop: bootstrap (version handshake), stream WAL from its guard,
 * reconcile when the primary refuses the guard, heartbeat once a second, and reconnect with
 * backoff when the channel breaks. Applying a batch and its guard is one atomic engine write, so a
 * crash anywhere resumes from the persisted guard with no gap and no duplicate.
 *
 * The primary cluster may be several nodes of which one at a time is active (HA): the loop dials
 * the addresses it knows of it (primary-addrs.ts) in turn. An address that is unreachable (refused,
 * no answer, not serving) sends the next attempt to the next address at once; the backoff applies
 * between full rounds. A standby of the primary cluster answers with the active node's address
 * (NotActiveNode), which is dialled next instead. Every node shares the WAL, so the stream resumes
 * from the same guard wherever it reconnects, without a Merkle sync.
 *
 *   const loop = new SecondaryLoop({ engine, connect: (address) => ..., addrs, secondaryId, kind: 'dr', ... });
 *   loop.start(); ... await loop.stop();
 */
import type { Logger } from 'pino';
import type { Behind, Kind } from '../core/replication/index.js';
import { VERSION } from '../core/version.js';
import type { StorageEngine } from '../storage/engine.js';
import { applierFor, DYNAMIC_FILTER_KEY, type Applier } from './applier.js';
import type { EmitEvent } from './events.js';
import { reconcile } from './reconcile.js';
import { Verifier, type VerificationStatus } from './verification.js';
import type { LastSeenStore } from './secondary-views.js';
import { PrimaryAddrs, type AddrsSnapshot } from './primary-addrs.js';
import { ChannelError, ChannelReason, NotActiveNode, type BootstrapInfo, type ConnectionState, type PrimaryClient, type StreamHandle } from './transport.js';

export type SecondaryState = 'idle' | 'stream-wals' | 'merkle-diff' | 'merkle-sync';

export interface SecondaryLoopOptions {
  readonly engine: StorageEngine;
  /**
   * How received entries are applied, and the upstream guard they move (applier.ts). Default:
   * the primary's WAL becomes this node's (DR).
   */
  readonly applier?: Applier;
  /** A client of the primary node at `address` (one of `addrs`). */
  readonly connect: (address: string) => PrimaryClient;
  /** The primary cluster's addresses and the dial cursor; one address ('') unless given. */
  readonly addrs?: PrimaryAddrs;
  /** The known addresses or the connected one changed (the driver persists them). */
  readonly onAddrs?: (addrs: AddrsSnapshot) => void;
  readonly secondaryId: string;
  readonly kind: Kind;
  /** The version sent in the handshake; VERSION unless given. */
  readonly version?: string;
  readonly apiAddr: () => string;
  readonly clusterAddr: () => string;
  readonly log: Logger;
  readonly now?: () => number;
  /** Called after every applied batch (the node reloads caches when it must). */
  readonly onApplied?: (lastIndex: bigint) => void;
  /** A refusal that retrying may not fix (version, revoked): reported, and retried with backoff. */
  readonly onFatal?: (message: string) => void;
  /** After each successful handshake with the primary. */
  readonly onBootstrap?: (info: BootstrapInfo) => void;
  /** Heartbeat interval. Default 1000 ms. */
  readonly heartbeatMs?: number;
  /** Keeps the last heartbeat with the primary (key 'primary') across restarts. */
  readonly lastSeen?: LastSeenStore;
  /** Least time between two persists of the last heartbeat. Default 30 s. */
  readonly persistEveryMs?: number;
  /** Replication events (events.ts): connection lost and regained, Merkle diff and sync. */
  readonly emit?: EmitEvent;
}

export interface SecondaryProgress {
  state: SecondaryState;
  connection: ConnectionState;
  lastRemoteWal: bigint;
  primaryLastWal: bigint;
  primaryCommitTimeMs: number;
  lastHeartbeatMs: number;
  heartbeatDurationMs: number;
  clockSkewMs: number;
  lastStartMs: number;
  /** Commit time of the newest applied entry (primary clock). */
  lastAppliedCommitMs: number;
  lastError: string;
  /** When lastError was set (ms, 0: never): a client can tell an old error from a current one. */
  lastErrorMs: number;
  syncTotal: number;
  syncDone: number;
  /** Reconciles started since this loop started: a new one's progress never reads as the last one's. */
  syncStarted: number;
  lastSync: { fetched: number; deleted: number } | undefined;
  /** Since this loop started: merkle-syncs finished, and the keys they fetched and deleted (metrics counters). */
  syncTotals: { syncs: number; fetched: number; deleted: number };
  /** Payload bytes the last reconcile received from the primary (reconcile.ts `bytes`); 0 before any. */
  lastSyncBytes: number;
}

const HEARTBEAT_MS = 1000;
/** Between two addresses of one round: the next node is tried at once (a takeover takes seconds). */
const NEXT_ADDRESS_MS = 50;
/** The handshake's deadline when other addresses wait their turn (an address that swallows packets). */
const ROTATING_BOOTSTRAP_DEADLINE_MS = 4_000;

/** A failure that says nothing answered at that address: the next one is tried. */
function unreachable(e: unknown): boolean {
  if (!(e instanceof ChannelError)) return false;
  return e.reason === ChannelReason.unavailable || e.reason === ChannelReason.notSent || e.reason === ChannelReason.deadline;
}

export class SecondaryLoop {
  readonly progress: SecondaryProgress;
  private client: PrimaryClient | undefined;
  private stream: StreamHandle | undefined;
  private running = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private backoffMs = 100;
  private applying: Promise<void> = Promise.resolve();
  private done: Promise<void> = Promise.resolve();
  private lastPersistMs = 0;
  private persisting: Promise<void> = Promise.resolve();
  /** The connection as events last told it: one event per change, not one per failed retry. */
  private told: 'up' | 'down' | undefined;
  /** Unreachable addresses in a row since the last backoff or stream: a full round backs off. */
  private missesInRound = 0;
  readonly addrs: PrimaryAddrs;

  private readonly applier: Applier;
  private readonly verifier: Verifier;

  constructor(private readonly o: SecondaryLoopOptions) {
    this.applier = o.applier ?? applierFor(o.kind, o.engine);
    this.addrs = o.addrs ?? new PrimaryAddrs({ configured: '' });
    this.verifier = new Verifier({ kind: o.kind, engine: o.engine, now: () => this.now(), log: o.log, ...(o.emit ? { emit: o.emit } : {}) });
    this.progress = {
      state: 'idle', connection: 'idle', lastRemoteWal: this.applier.guard().index, primaryLastWal: 0n, primaryCommitTimeMs: 0,
      lastHeartbeatMs: 0, heartbeatDurationMs: 0, clockSkewMs: 0, lastStartMs: 0, lastAppliedCommitMs: 0, lastError: '', lastErrorMs: 0,
      syncTotal: 0, syncDone: 0, syncStarted: 0, lastSync: undefined, syncTotals: { syncs: 0, fetched: 0, deleted: 0 }, lastSyncBytes: 0,
    };
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.progress.lastStartMs = this.now();
    void this.o.lastSeen?.load().then(
      (seen) => {
        const ms = seen['primary']?.ms;
        if (this.progress.lastHeartbeatMs === 0 && ms !== undefined) this.progress.lastHeartbeatMs = ms;
      },
      (e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'could not load the last heartbeat'),
    );
    this.heartbeatTimer = setInterval(() => void this.beat(), this.o.heartbeatMs ?? HEARTBEAT_MS);
    this.heartbeatTimer.unref();
    this.done = this.session();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.retryTimer);
    this.stream?.cancel();
    this.client?.close();
    this.client = undefined;
    this.progress.state = 'idle';
    this.progress.connection = 'shutdown';
    await this.done.catch(() => undefined);
    await this.applying.catch(() => undefined);
    this.persistLastSeen(true);
    await this.persisting;
  }

  /** Continuous verification against the roots the primary's heartbeats carry (verification.ts). */
  get verification(): VerificationStatus {
    return this.verifier.status;
  }

  /** Behind the primary as of the last message or heartbeat from it. */
  behind(): boolean {
    return this.behindBy() !== null;
  }

  /** How far behind, when the primary last told of an index above what this secondary applied. */
  behindBy(): Behind | null {
    const applied = this.applier.guard().index;
    const last = this.progress.primaryLastWal;
    return last > applied ? { applied: Number(applied), primaryLast: Number(last) } : null;
  }

  /** Throttled: on stop (forced), else at most once per persistEveryMs. */
  private persistLastSeen(force: boolean): void {
    const store = this.o.lastSeen;
    const ms = this.progress.lastHeartbeatMs;
    if (!store || ms === 0) return;
    const now = this.now();
    if (!force && now - this.lastPersistMs < (this.o.persistEveryMs ?? 30_000)) return;
    this.lastPersistMs = now;
    this.persisting = this.persisting
      .then(() => store.save({ primary: { ms } }))
      .catch((e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'could not persist the last heartbeat'));
  }

  midSync(): boolean {
    return this.progress.state === 'merkle-diff' || this.progress.state === 'merkle-sync';
  }

  /** One event per change of the connection (the first failure after start counts as one). */
  private tell(now: 'up' | 'down', detail: Record<string, unknown> = {}): void {
    if (this.told === now) return;
    this.told = now;
    this.o.emit?.(now === 'up' ? 'connected' : 'disconnected', detail);
  }

  /**
   * The address of the primary node this secondary last completed a handshake with ('' before
   * any): where status says it is connected and forwarded writes go.
   */
  get primaryAddr(): string {
    return this.addrs.connected;
  }

  private retry(reason: string, error?: unknown): void {
    if (!this.running) return;
    this.tell('down', { reason: reason.slice(0, 256) });
    this.progress.lastError = reason;
    this.progress.lastErrorMs = this.now();
    this.progress.state = 'idle';
    this.progress.connection = 'transient_failure';
    this.stream?.cancel();
    this.stream = undefined;
    this.client?.close();
    this.client = undefined;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.done = this.session();
    }, this.nextDelay(error));
  }

  /**
   * How long until the next attempt, moving the cursor when the address was unreachable: the
   * next address at once, the backoff once every address of the round failed. Any other failure
   * (a refusal, a failed apply) retries the same address after the backoff.
   */
  private nextDelay(error: unknown): number {
    // An HA standby named the active node: that address next (a standby that knows none yet: the
    // next address, as if unreachable). Counted in the round, so standbys that name each other
    // from stale views still back off once per round.
    if (error instanceof NotActiveNode && error.activeClusterAddr !== undefined) {
      const from = this.addrs.current;
      const knew = this.addrs.known.join('\n');
      if (this.addrs.jumpTo(error.activeClusterAddr) && this.addrs.current !== from) {
        this.missesInRound++;
        this.tellAddrs(this.addrs.known.join('\n') !== knew);
        this.o.log.info({ from, to: this.addrs.current }, 'this node of the primary cluster is a standby; dialling the active node it named');
        if (this.missesInRound < Math.max(2, this.addrs.size)) return NEXT_ADDRESS_MS;
        return this.backoff();
      }
    }
    if (unreachable(error) && this.addrs.size > 1) {
      const from = this.addrs.current;
      this.addrs.advance();
      this.missesInRound++;
      this.o.log.info({ from, to: this.addrs.current }, 'primary unreachable at this address; trying the next known address');
      if (this.missesInRound < this.addrs.size) return NEXT_ADDRESS_MS;
    }
    return this.backoff();
  }

  /** The round is over: the next attempt waits the backoff, which grows. */
  private backoff(): number {
    this.missesInRound = 0;
    const wait = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, 2000);
    return wait;
  }

  private tellAddrs(changed: boolean): void {
    if (changed) this.o.onAddrs?.(this.addrs.snapshot());
  }

  private async session(): Promise<void> {
    if (!this.running) return;
    const log = this.o.log;
    try {
      this.progress.connection = 'connecting';
      if (this.progress.lastAppliedCommitMs === 0 && !this.applier.ownWal) {
        // The commit time of what we hold, so lag_ms is real before the first batch arrives.
        const last = this.o.engine.lastGuard().index;
        const [entry] = last > 0n ? await this.o.engine.readWal(last, 1).catch(() => []) : [];
        this.progress.lastAppliedCommitMs = entry?.time ?? 0;
      }
      const client = this.o.connect(this.addrs.current);
      this.client = client;
      const req = { secondaryId: this.o.secondaryId, version: this.o.version ?? VERSION, kind: this.o.kind, apiAddr: this.o.apiAddr(), clusterAddr: this.o.clusterAddr() };
      const info = await (this.addrs.size > 1 ? client.bootstrap(req, ROTATING_BOOTSTRAP_DEADLINE_MS) : client.bootstrap(req));
      if (this.client !== client || !this.running) return;
      this.progress.primaryLastWal = info.lastWal;
      const moved = this.addrs.markConnected();
      if (moved) log.info({ primary_cluster_addr: this.addrs.current }, 'connected to the primary at this address');
      this.tellAddrs(this.addrs.learn(info.clusterAddrs ?? []) || moved);
      this.o.onBootstrap?.(info);
      await this.openStream();
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (e instanceof ChannelError && e.refused) {
        log.error({ err: message, primary_cluster_addr: this.addrs.current }, 'primary refused this secondary');
        this.progress.lastError = message;
        this.o.onFatal?.(message);
        return this.retry(message, e);
      }
      log.warn({ err: message, primary_cluster_addr: this.addrs.current }, 'replication session failed; retrying');
      this.retry(message, e);
    }
  }

  private async openStream(): Promise<void> {
    const client = this.client;
    if (!client || !this.running) return;
    const guard = this.applier.guard();
    await new Promise<void>((resolve) => {
      let settled = false;
      const settle = () => {
        if (!settled) {
          settled = true;
          resolve();
        }
      };
      const handle: StreamHandle = client.streamWal(
        { secondaryId: this.o.secondaryId, guard, maxBatchEntries: 512 },
        {
          onMessage: async (m) => {
            switch (m.type) {
              case 'start':
                this.progress.primaryLastWal = m.lastWal;
                if (m.outcome === 'ok') {
                  this.progress.state = 'stream-wals';
                  this.progress.connection = 'ready';
                  this.backoffMs = 100;
                  this.missesInRound = 0;
                  this.tell('up', { primary_last_wal: Number(m.lastWal) });
                  // The first heartbeat goes out as the stream opens, so both ends report it at once.
                  void this.beat();
                } else {
                  this.o.log.info({ outcome: m.outcome, guard: guard.index.toString() }, 'primary refused our guard; reconciling');
                  this.applying = this.applying.then(() => this.reconcileThenStream());
                }
                return;
              case 'batch': {
                const apply = this.applying.then(async () => {
                  await this.applier.apply(m.entries);
                  const last = m.entries.at(-1);
                  if (last) {
                    this.progress.lastRemoteWal = last.index;
                    this.progress.lastAppliedCommitMs = last.time;
                    this.o.onApplied?.(last.index);
                  }
                  this.progress.primaryLastWal = m.primaryLastWal;
                  this.progress.primaryCommitTimeMs = m.primaryCommitTimeMs;
                });
                this.applying = apply.catch((e: unknown) => {
                  this.retry(`apply failed: ${e instanceof Error ? e.message : String(e)}`);
                });
                // Returning the apply promise makes the transport wait: flow control end to end.
                return apply.catch(() => undefined);
              }
              case 'heartbeat':
                this.progress.primaryLastWal = m.lastWal > this.progress.primaryLastWal ? m.lastWal : this.progress.primaryLastWal;
                this.progress.primaryCommitTimeMs = m.lastCommitTimeMs;
                // A draining primary, or one holding a forwarded write's answer, waits for our
                // confirmation: send it once what came before is applied.
                if (m.draining || m.ack) this.applying = this.applying.then(() => this.beat());
                // Compared once everything received before it is applied: the index is then ours too.
                if (m.verify) {
                  const v = m.verify;
                  this.applying = this.applying.then(() => {
                    let compared = false;
                    try {
                      compared = this.verifier.check(v, this.applier.guard().index);
                    } catch (e) {
                      this.o.log.warn({ err: (e as Error).message }, 'replication verification could not compare roots');
                    }
                    // Diverged at the same index (just compared): repaired here, by the reconcile a refused guard runs.
                    if (compared && this.verifier.repairDue() && this.progress.state === 'stream-wals') {
                      this.verifier.repairStarted();
                      return this.reconcileThenStream('verification_mismatch');
                    }
                    return undefined;
                  });
                }
                return;
            }
          },
          onEnd: (error) => {
            settle();
            // A stream this loop cancelled itself (retrying already, or reconciling) is not a new failure.
            if (this.stream !== handle) return;
            if (this.progress.state === 'merkle-diff' || this.progress.state === 'merkle-sync') return;
            if (this.running) this.retry(error ? error.message : 'stream ended', error);
          },
        },
      );
      this.stream = handle;
    });
  }

  /** `reason`: why (events and the log): the primary refused our guard, or our root differed from its. */
  private async reconcileThenStream(reason: 'guard_refused' | 'verification_mismatch' = 'guard_refused'): Promise<void> {
    const client = this.client;
    if (!client) return;
    // Before the cancel: the stream's end must read as the reconcile's doing, not a broken channel
    // (a primary whose filter for us changed tells us mid-stream, and waits for us to hang up).
    this.progress.state = 'merkle-diff';
    // The diff phase of a new reconcile has nothing done yet: not the last sync's figures.
    this.progress.syncTotal = 0;
    this.progress.syncDone = 0;
    this.progress.syncStarted++;
    this.stream?.cancel();
    this.o.emit?.('merkle-diff-started', { guard: Number(this.applier.guard().index), reason });
    try {
      const r = await reconcile({
        client,
        engine: this.o.engine,
        applier: this.applier,
        secondaryId: this.o.secondaryId,
        // A secondary with its own WAL (performance) keeps the dynamic filter it was served with.
        ...(this.applier.ownWal ? { alsoFetch: [DYNAMIC_FILTER_KEY] } : {}),
        onPhase: (p) => {
          if (p === 'merkle-sync' && this.progress.state !== 'merkle-sync') this.o.emit?.('merkle-sync-started', {});
          this.progress.state = p;
        },
        onProgress: ({ total, done }) => {
          this.progress.syncTotal = total;
          this.progress.syncDone = done;
        },
        onInstalled: (guard) => {
          this.progress.lastRemoteWal = guard.index;
          this.o.onApplied?.(guard.index);
        },
      });
      this.progress.lastSync = { fetched: r.fetched, deleted: r.deleted };
      const t = this.progress.syncTotals;
      this.progress.syncTotals = { syncs: t.syncs + 1, fetched: t.fetched + r.fetched, deleted: t.deleted + r.deleted };
      this.progress.lastSyncBytes = r.bytes;
      this.o.log.info({ fetched: r.fetched, deleted: r.deleted, keys_moved: r.fetched + r.deleted, bytes: r.bytes, pages: r.comparedPages, guard: r.guard.index.toString(), reason }, 'merkle-sync finished; streaming');
      this.o.emit?.('merkle-sync-finished', { fetched_keys: r.fetched, deleted_keys: r.deleted, keys_moved: r.fetched + r.deleted, bytes: r.bytes, guard: Number(r.guard.index), reason });
      this.progress.state = 'idle';
      // Not awaited: this runs inside the apply chain, and the stream's batches queue on it.
      void this.openStream();
    } catch (e) {
      // `code`: the replication channel's reason when the call failed there (deadline, unavailable, ...).
      this.o.emit?.('merkle-sync-failed', { reason: (e instanceof Error ? e.message : String(e)).slice(0, 256), ...(e instanceof ChannelError ? { code: e.reason } : {}) });
      this.retry(`reconcile failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private async beat(): Promise<void> {
    const client = this.client;
    if (!client || !this.running) return;
    this.progress.connection = client.connectionState();
    const sent = this.now();
    try {
      const r = await client.heartbeat({
        secondaryId: this.o.secondaryId,
        applied: this.applier.guard(),
        sentAtMs: sent,
        state: this.progress.state,
        apiAddr: this.o.apiAddr(),
        clusterAddr: this.o.clusterAddr(),
      });
      const back = this.now();
      this.progress.lastHeartbeatMs = back;
      this.progress.heartbeatDurationMs = back - sent;
      // Skew: the primary's clock at the midpoint of the round trip versus ours.
      this.progress.clockSkewMs = Math.round(r.receivedAtMs - (sent + back) / 2);
      this.progress.primaryLastWal = r.lastWal > this.progress.primaryLastWal ? r.lastWal : this.progress.primaryLastWal;
      this.progress.primaryCommitTimeMs = r.lastCommitTimeMs;
      // What the node at this address says of its cluster's membership.
      if (client === this.client) this.tellAddrs(this.addrs.learn(r.clusterAddrs ?? []));
      this.persistLastSeen(this.lastPersistMs === 0);
    } catch {
      this.progress.connection = client.connectionState();
    }
  }
}
