/**
 * A performance standby's read barrier: before a standby answers a request itself, it makes sure
 * it holds everything the shared database held when the request arrived (a write any node
 * acknowledged before is visible, a revoked token is refused, a policy or mount change is in
 * force). One follow of storage (engine.followReads: one round trip) serves every
 * request that arrived before it began; requests arriving while one runs wait for the next.
 *
 *   const reads = new StandbyReads({ follow: () => engine.followReads(), reloadCaches: () => core.reload(), cachesDeriveFrom });
 *   await reads.current();   // then answer from memory; rejects when storage could not be read
 */
import type { Followed } from '../storage/engine.js';

export interface StandbyReadsOptions {
  /** Brings the engine's read cache up to the database (engine.followReads). */
  readonly follow: () => Promise<Followed>;
  /** Reads the core's caches (policies, mounts, namespaces, keyring, audit devices) again. */
  readonly reloadCaches: () => Promise<void>;
  /** Whether those caches derive from a storage key. */
  readonly cachesDeriveFrom: (key: string) => boolean;
}

export class StandbyReads {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** The caches must be read again before the next answer (a reload failed, or storage was replaced). */
  private stale = true;

  constructor(private readonly o: StandbyReadsOptions) {}

  /**
   * Resolves once a follow that began after this call has finished and the caches reflect it;
   * rejects with its error (the caller relays or answers 503, never from what it holds).
   */
  current(): Promise<void> {
    if (this.running === undefined) return this.begin();
    // The follow in flight may have read storage before the caller's request arrived.
    this.queued ??= this.running.then(
      () => this.next(),
      () => this.next(),
    );
    return this.queued;
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
    const followed = await this.o.follow();
    if (!followed.known || followed.keys.some(this.o.cachesDeriveFrom)) this.stale = true;
    if (!this.stale) return;
    await this.o.reloadCaches();
    this.stale = false;
  }
}
