/**
 * A performance standby's read barrier: before a standby answers a request itself, it makes sure
 * it holds everything the shared database held when the request arrived (a write any node
 * acknowledged before is visible, a revoked token is refused, a policy or mount change is in
 * force). One follow of storage (engine.followReads: one round trip) serves every
 * request that arrived before it began; requests arriving while one runs wait for the next.
 * With a read lease from the active node that is fresh (src/core/ha/read-lease.ts: leased, and
 * no commit pushed since the last follow began), a request needs no follow at all.
 *
 *   const reads = new StandbyReads({ follow: () => engine.followReads(), reloadCaches: () => core.reload(), cachesDeriveFrom });
 *   await reads.current();   // then answer from memory; rejects when storage could not be read
 */
import type { HeldReadLease } from '../core/ha/read-lease.js';
import type { Followed, PushedWal } from '../storage/engine.js';

const CURRENT: Promise<void> = Promise.resolve();

export interface StandbyReadsOptions {
  /** Brings the engine's read cache up to the database (engine.followReads). */
  readonly follow: () => Promise<Followed>;
  /** Takes WAL entries the active node pushed into the engine's read cache (engine.applyPushed). */
  readonly takePushed?: (wal: PushedWal) => Followed | undefined;
  /** Reads the core's caches (policies, mounts, namespaces, keyring, audit devices) again. */
  readonly reloadCaches: () => Promise<void>;
  /** Whether those caches derive from a storage key. */
  readonly cachesDeriveFrom: (key: string) => boolean;
  /**
   * The read lease from the active node (src/core/ha/read-lease.ts), with its monotonic clock:
   * while it is fresh, a request is answered with no follow at all.
   */
  readonly lease?: { readonly held: HeldReadLease; readonly now: () => number };
}

export class StandbyReads {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** Follows begun (metrics: a fresh read lease makes none). */
  follows = 0;
  /** The caches must be read again before the next answer (a reload failed, or storage was replaced). */
  private stale = true;

  constructor(private readonly o: StandbyReadsOptions) {}

  /**
   * Resolves once a follow that began after this call has finished and the caches reflect it;
   * rejects with its error (the caller relays or answers 503, never from what it holds).
   */
  current(): Promise<void> {
    // Leased, and no push newer than the last follow: every acknowledged write is followed.
    if (!this.stale && this.o.lease?.held.fresh(this.o.lease.now()) === true) return CURRENT;
    if (this.running === undefined) return this.begin();
    // The follow in flight may have read storage before the caller's request arrived.
    this.queued ??= this.running.then(
      () => this.next(),
      () => this.next(),
    );
    return this.queued;
  }

  /**
   * A push's entries, taken as a follow would take them when nothing else runs: true when they
   * were and no cache derives from them (the push then counts as followed); false leaves it to a
   * follow. Never beside a follow (the follow's range read may predate the entries).
   */
  takePushed(wal: PushedWal): boolean {
    if (this.running !== undefined || this.stale || this.o.takePushed === undefined) return false;
    let taken: Followed | undefined;
    try {
      taken = this.o.takePushed(wal);
    } catch {
      return false;
    }
    if (taken === undefined) return false;
    if (taken.keys.some(this.o.cachesDeriveFrom)) {
      this.stale = true;
      return false;
    }
    return true;
  }

  /** The next answer must not come from caches read before now (this node was active, or sealed). */
  invalidate(): void {
    this.stale = true;
  }

  private next(): Promise<void> {
    this.queued = undefined;
    return this.begin();
  }

  private begin(): Promise<void> {
    const run = this.sync().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async sync(): Promise<void> {
    this.follows++;
    const mark = this.o.lease?.held.followBegins();
    const followed = await this.o.follow();
    if (!followed.known || followed.keys.some(this.o.cachesDeriveFrom)) this.stale = true;
    if (this.stale) {
      await this.o.reloadCaches();
      this.stale = false;
    }
    if (mark !== undefined) this.o.lease?.held.followed(mark);
  }
}
