/**
 * A standby keeps its engine near the active node's writes, so becoming active reads little,
 * and reads the replication state the active node keeps (sys/health shows it). As a performance
 * standby it answers reads itself once current (standby-reads.ts): its engine follows the shared
 * database and its caches are read again when what it follows names them.
 *
 *   const follow = new StandbyFollow({ ha: controller, engine, vault, cachesDeriveFrom, log, performanceStandby: true });
 *   setInterval(() => follow.follow(), FOLLOW_MS);
 *   follow.servesReads();        // a performance standby, current enough to answer reads
 *   await follow.current();      // the read barrier
 */
import type { Logger } from 'pino';
import type { HeldReadLease, PushedWal } from '../core/ha/read-lease.js';
import { recordedModes, type RecordedModes } from '../replication/index.js';
import type { HaView } from './controller.js';
import type { HaEngine, HaVault } from './ports.js';
import { StandbyReads } from './standby-reads.js';

export interface StandbyFollowOptions {
  /** The controller (made before the follow). */
  readonly ha: { view(): HaView; onChange(listener: (view: HaView) => void): () => void };
  readonly engine: HaEngine;
  readonly vault: HaVault;
  /** Whether the vault's caches derive from a storage key. */
  readonly cachesDeriveFrom: (key: string) => boolean;
  readonly log: Logger;
  /** Standbys answer reads themselves (config `disable_performance_standby` false). */
  readonly performanceStandby: boolean;
  /** The read lease from the active node, with its monotonic clock (standby-reads.ts). */
  readonly lease?: { readonly held: HeldReadLease; readonly now: () => number };
}

export class StandbyFollow {
  private following: Promise<unknown> | undefined;
  private replicationSeen: RecordedModes | undefined;
  private readonly reads: StandbyReads;

  constructor(private readonly o: StandbyFollowOptions) {
    this.reads = new StandbyReads({
      follow: () => o.engine.followReads(),
      takePushed: (wal) => o.engine.applyPushed(wal),
      reloadCaches: () => o.vault.reload(),
      cachesDeriveFrom: o.cachesDeriveFrom,
      ...(o.lease !== undefined ? { lease: o.lease } : {}),
    });
    o.ha.onChange(() => {
      if (!this.isStandby()) {
        this.replicationSeen = undefined;
        this.reads.invalidate();
      }
    });
  }

  isStandby(): boolean {
    const mode = this.o.ha.view().mode;
    return mode === 'standby' || mode === 'cooldown';
  }

  /**
   * A performance standby answers reads itself: unsealed and following, not of a DR secondary
   * cluster (it answers no reads), and only once the replication state it follows is known.
   */
  servesReads(): boolean {
    const seen = this.replicationSeen;
    return this.o.performanceStandby && this.isStandby() && seen !== undefined && seen.dr !== 'secondary' && this.o.engine.failure() === undefined;
  }

  /** Follows the read barrier began (metrics: a fresh read lease makes none). */
  follows(): number {
    return this.reads.follows;
  }

  /** Takes the WAL entries a read-lease push carried, when they follow what this standby followed (standby-reads.ts). */
  takePushed(wal: PushedWal): boolean {
    return this.reads.takePushed(wal);
  }

  /** The read barrier (standby-reads.ts). */
  current(): Promise<void> {
    return this.reads.current();
  }

  /**
   * On a standby, the replication modes and cluster id the active node keeps in storage (read on
   * every follow); undefined on the active node, a sealed one, or before the first read.
   */
  replication(): RecordedModes | undefined {
    return this.isStandby() ? this.replicationSeen : undefined;
  }

  /** One follow of the active node's writes, unless one runs or this node is not a standby. */
  follow(): void {
    const o = this.o;
    if (this.following !== undefined || !this.isStandby()) return;
    this.following = (async () => {
      // A standby has no commit of its own in doubt: once the database answers, a storage fault
      // recorded by a read is settled by reading everything again (the active node keeps its
      // fail-closed state until it steps down and reloads).
      if (o.engine.failure() !== undefined) {
        await o.engine.reload();
        this.reads.invalidate();
        o.log.info('HA: storage answers again; this standby reloaded its state from PostgreSQL');
      } else await o.engine.follow();
      await this.reads.current();
      const seen = await recordedModes(o.vault.store());
      this.replicationSeen = this.isStandby() ? seen : undefined;
    })()
      .catch((e: unknown) => o.log.debug({ err: (e as Error).message }, 'HA: following the active node\'s writes failed; retrying'))
      .finally(() => (this.following = undefined));
  }

  /** Resolves once the follow in flight, if any, has ended. */
  async settled(): Promise<void> {
    await this.following;
  }
}
