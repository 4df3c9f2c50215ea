/**
 * Read leases between an HA cluster's active node and its performance standbys, pure: a standby
 * holding a lease answers a read with no round trip to the shared database, because the active
 * node tells it of every commit before acknowledging it.
 *
 * The promise: while a standby's lease is valid (its own clock), the active node acknowledges no
 * write until the standby has acknowledged a `push` of it. A standby that got every push answers
 * from what it followed; one that got a push newer than its last follow follows once (one round
 * trip, standby-reads.ts) before it answers. So a write any node acknowledged is visible on every
 * standby that answers without following, as the per-read follow made it before.
 *
 * The arithmetic that keeps it safe (both clocks are monotonic and measured in ms; only their
 * rates are assumed alike, within LEASE_DRIFT):
 * - The standby asks at `askedAt` (its clock) and takes `askedAt + durationMs * (1 - drift)` as its
 *   lease's end; the active node grants later and holds the standby leased until `grantedAt +
 *   durationMs` (its clock): the active node's view ends last.
 * - `durationMs` never passes the active node's own lease deadline (lease.ts `deadlineOf`): once
 *   another node can take over, no standby still holds a lease from this one. Stepping down
 *   revokes every lease (or waits for it to end) before the lock row is released.
 * - A standby that keeps asking but does not acknowledge a push is granted nothing that reaches
 *   past `maxMs` after that push: a commit never waits longer than one lease for any standby.
 * - A grant carries the active node's push count: commits it made while the standby held no lease
 *   (not pushed to it) make the standby follow before its first answer under the new lease. A new
 *   stream (another active node, or a reconnection) starts with nothing followed.
 *
 *   const held = new HeldReadLease();                 // the standby's side
 *   held.granted(askedAt, grant, stream); held.pushed(seq);
 *   if (held.fresh(now)) answer(); else { const k = held.followBegins(); await follow(); held.followed(k); }
 *
 *   const ledger = new GrantLedger({ maxMs: 1000 });  // the active node's side
 *   const grant = ledger.grant(id, now, deadlineIn);  // undefined: no lease given
 *   const seq = ledger.publish(now);                  // then wait for ledger.waitingOn(seq, now)
 */

/** A standby counts its lease this much shorter than granted, for clock rates that differ. */
export const LEASE_DRIFT = 0.1;

/**
 * The WAL entries one committed batch wrote, in index order, as the active node pushes them with
 * the batch's count (src/storage/read-follow.ts pushedWal), so a standby that followed everything
 * before takes them into its cache with no round trip: `first` .. `last` with every record.
 */
export interface PushedWal {
  readonly first: bigint;
  readonly last: bigint;
  readonly records: readonly Buffer[];
}

/** What the active node sends a standby. */
export type LeaseDown =
  | { readonly type: 'grant'; readonly ask: number; readonly durationMs: number; readonly seq: number }
  | { readonly type: 'push'; readonly seq: number; readonly wal?: PushedWal }
  | { readonly type: 'revoke' };

/** What a standby sends the active node. */
export type LeaseUp = { readonly type: 'ask'; readonly ask: number } | { readonly type: 'ack'; readonly seq: number } | { readonly type: 'revoked' };

/** The standby's lease: until when it may answer without following, and what it has followed. */
export class HeldReadLease {
  private until = 0;
  /** The newest push count this standby heard of on its stream. */
  private known = 0;
  /** The push count at the start of the last follow that finished (-1: none on this stream). */
  private covered = -1;
  private stream: unknown;

  /** A grant answered an ask sent at `askedAt` on `stream` (any identity of the connection). */
  granted(askedAt: number, grant: { readonly durationMs: number; readonly seq: number }, stream: unknown): void {
    if (stream !== this.stream) this.lost(stream);
    this.known = Math.max(this.known, grant.seq);
    if (grant.durationMs > 0) this.until = Math.max(this.until, askedAt + grant.durationMs * (1 - LEASE_DRIFT));
  }

  /** The active node committed its `seq`th push-counted batch (answer it with an ack at once). */
  pushed(seq: number, stream: unknown): void {
    if (stream !== this.stream) this.lost(stream);
    this.known = Math.max(this.known, seq);
  }

  /** The active node revoked the lease (it steps down). */
  revoked(): void {
    this.until = 0;
  }

  /** The stream ended or changed: no lease, and nothing counts as followed until a follow on the next one. */
  lost(stream?: unknown): void {
    this.until = 0;
    this.known = 0;
    this.covered = -1;
    this.stream = stream;
  }

  /** What a follow that begins now covers; hand it to followed() once the follow succeeded. */
  followBegins(): { readonly stream: unknown; readonly seq: number } {
    return { stream: this.stream, seq: this.known };
  }

  /** Whether every push up to `mark` (taken on `stream`) has been followed. */
  covers(mark: { readonly stream: unknown; readonly seq: number }, stream: unknown): boolean {
    return mark.stream === stream && this.stream === stream && this.covered >= mark.seq;
  }

  followed(mark: { readonly stream: unknown; readonly seq: number }): void {
    if (mark.stream === this.stream) this.covered = Math.max(this.covered, mark.seq);
  }

  /** Whether a read arriving now may be answered from what this standby followed. */
  fresh(now: number): boolean {
    return now < this.until && this.covered >= this.known;
  }

  /** For sys/ha-status and tests: the lease's remaining ms (0: none). */
  remainingMs(now: number): number {
    return Math.max(0, this.until - now);
  }
}

interface Leased {
  until: number;
  acked: number;
  /** The last count pushed to it, and when the oldest push it has not acknowledged went out. */
  pushed: number;
  pendingSince: number | undefined;
}

/** The active node's record of the leases it granted and the pushes each standby acknowledged. */
export class GrantLedger {
  private seq = 0;
  private readonly leases = new Map<string, Leased>();
  private closed = false;

  constructor(private readonly o: { readonly maxMs: number }) {}

  /**
   * A grant for `id`'s ask, or undefined when none may be given: stopped (stepping down), or the
   * node's own lease ends in `deadlineInMs` or less (undefined: not the active node).
   */
  grant(id: string, ask: number, now: number, deadlineInMs: number | undefined): LeaseDown | undefined {
    if (this.closed || deadlineInMs === undefined) return undefined;
    const l = this.leases.get(id) ?? { until: 0, acked: 0, pushed: 0, pendingSince: undefined };
    // A standby that asks but does not acknowledge a push is not kept leased past maxMs from that
    // push: the commit waiting for it goes on then, whatever the standby asks meanwhile.
    const cap = l.pendingSince === undefined ? Number.POSITIVE_INFINITY : l.pendingSince + this.o.maxMs - now;
    const durationMs = Math.floor(Math.min(this.o.maxMs, deadlineInMs, cap));
    if (durationMs <= 0) return undefined;
    l.until = Math.max(l.until, now + durationMs);
    this.leases.set(id, l);
    return { type: 'grant', ask, durationMs, seq: this.seq };
  }

  /** A batch is durable: its push count, to send to every standby leased at `now`. */
  publish(now: number): number {
    const seq = ++this.seq;
    for (const l of this.leases.values()) {
      if (l.until <= now) continue;
      if (l.acked >= l.pushed) l.pendingSince = now;
      l.pushed = seq;
    }
    return seq;
  }

  acked(id: string, seq: number): void {
    const l = this.leases.get(id);
    if (l === undefined) return;
    l.acked = Math.max(l.acked, seq);
    if (l.acked >= l.pushed) l.pendingSince = undefined;
  }

  /** A standby acknowledged a revoke: it holds no lease now. */
  revoked(id: string): void {
    this.leases.delete(id);
  }

  /**
   * The standbys whose acknowledgement of `seq` the active node still waits for at `now`, with the
   * time each lease ends; empty: the batch may be acknowledged. Expired leases are forgotten.
   */
  waitingOn(seq: number, now: number): Array<{ readonly id: string; readonly until: number }> {
    const out: Array<{ id: string; until: number }> = [];
    for (const [id, l] of this.leases) {
      if (l.until <= now) this.leases.delete(id);
      // Only a standby that was pushed `seq` acknowledges it: one leased since learned of it
      // from its grant's count, and never acknowledges it.
      else if (l.pushed >= seq && l.acked < seq) out.push({ id, until: l.until });
    }
    return out;
  }

  /** Whether any standby holds a lease at `now` (a commit waits for nobody otherwise). */
  anyLeased(now: number): boolean {
    for (const [id, l] of this.leases) {
      if (l.until > now) return true;
      this.leases.delete(id);
    }
    return false;
  }

  /** Stepping down: no more grants until open() (the next active term). */
  close(): void {
    this.closed = true;
  }

  open(): void {
    this.closed = false;
  }

  /** Every standby still leased at `now`, with its lease's end. */
  leased(now: number): Array<{ readonly id: string; readonly until: number }> {
    const out: Array<{ id: string; until: number }> = [];
    for (const [id, l] of this.leases) {
      if (l.until <= now) this.leases.delete(id);
      else out.push({ id, until: l.until });
    }
    return out;
  }
}
