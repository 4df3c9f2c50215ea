/**
 * A secondary's replication loop: bootstrap (version handshake), stream WAL from its guard,
 * reconcile when the primary refuses the guard, heartbeat once a second, and reconnect with
 * backoff when the channel breaks. Applying a batch and its guard is one atomic engine write, so a
 * crash anywhere resumes from the persisted guard with no gap and no duplicate.
 *
 *   const loop = new SecondaryLoop({ engine, connect, secondaryId, kind: 'dr', ... });
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
import { ChannelError, type BootstrapInfo, type ConnectionState, type PrimaryClient, type StreamHandle } from './transport.js';

export type SecondaryState = 'idle' | 'stream-wals' | 'merkle-diff' | 'merkle-sync';

export interface SecondaryLoopOptions {
  readonly engine: StorageEngine;
  /**
   * How received entries are applied, and the upstream guard they move (applier.ts). Default:
   * the primary's WAL becomes this node's (DR).
   */
  readonly applier?: Applier;
  readonly connect: () => PrimaryClient;
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

  private readonly applier: Applier;
  private readonly verifier: Verifier;

  constructor(private readonly o: SecondaryLoopOptions) {
    this.applier = o.applier ?? applierFor(o.kind, o.engine);
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
        const ms = seen['primary'];
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
      .then(() => store.save({ primary: ms }))
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

  private retry(reason: string): void {
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
    }, this.backoffMs);
    this.backoffMs = Math.min(this.backoffMs * 2, 2000);
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
      this.client = this.o.connect();
      const info = await this.client.bootstrap({ secondaryId: this.o.secondaryId, version: this.o.version ?? VERSION, kind: this.o.kind, apiAddr: this.o.apiAddr(), clusterAddr: this.o.clusterAddr() });
      this.progress.primaryLastWal = info.lastWal;
      this.o.onBootstrap?.(info);
      await this.openStream();
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (e instanceof ChannelError && e.refused) {
        log.error({ err: message }, 'primary refused this secondary');
        this.progress.lastError = message;
        this.o.onFatal?.(message);
        return this.retry(message);
      }
      log.warn({ err: message }, 'replication session failed; retrying');
      this.retry(message);
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
      this.stream = client.streamWal(
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
            if (this.progress.state === 'merkle-diff' || this.progress.state === 'merkle-sync') return;
            if (this.running) this.retry(error ? error.message : 'stream ended');
          },
        },
      );
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
      this.o.emit?.('merkle-sync-failed', { reason: (e instanceof Error ? e.message : String(e)).slice(0, 256) });
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
      this.persistLastSeen(this.lastPersistMs === 0);
    } catch {
      this.progress.connection = client.connectionState();
    }
  }
}
