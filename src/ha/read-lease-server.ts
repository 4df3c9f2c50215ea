/**
 * The active node's side of read leases (src/core/ha/read-lease.ts): it grants its performance
 * standbys short leases over the cluster port, and after every batch it committed it pushes the
 * batch's count to each leased standby and waits, before the batch resolves (and so before any
 * write in it is acknowledged), until each acknowledged it or its lease ended.
 *
 *   const leases = new ReadLeaseServer({ maxMs: 1000, now: monotonicNow, deadlineInMs: () => ... });
 *   cluster.serveHa({ ..., readLease: (stream) => leases.accept(stream) });
 *   backend's afterBatch: () => leases.published();   // undefined when nobody holds a lease
 *   await leases.revokeAll();                          // before the lock row is released
 */
import { randomBytes } from 'node:crypto';
import { GrantLedger, type LeaseDown, type LeaseUp, type PushedWal } from '../core/ha/read-lease.js';

/** One standby's stream as the transport hands it over. */
export interface LeaseStream {
  send(m: LeaseDown): void;
  onMessage(fn: (m: LeaseUp) => void): void;
  /** Called once when the stream ended, failed or was cancelled. */
  onEnd(fn: () => void): void;
  end(): void;
}

export interface ReadLeaseServerOptions {
  /** The longest lease granted (ms). */
  readonly maxMs: number;
  /** A monotonic clock (ms). */
  readonly now: () => number;
  /** How long this node's own lease surely lasts (ms); undefined: not the active node (no grant). */
  readonly deadlineInMs: () => number | undefined;
}

export class ReadLeaseServer {
  private readonly ledger: GrantLedger;
  private readonly streams = new Map<string, LeaseStream>();
  private readonly waiters = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(private readonly o: ReadLeaseServerOptions) {
    this.ledger = new GrantLedger({ maxMs: o.maxMs });
  }

  /** A standby opened its stream (the transport checked its certificate). */
  accept(stream: LeaseStream): void {
    const id = randomBytes(8).toString('hex');
    this.streams.set(id, stream);
    stream.onMessage((m) => {
      if (m.type === 'ask') {
        const g = this.ledger.grant(id, m.ask, this.o.now(), this.o.deadlineInMs());
        if (g !== undefined) stream.send(g);
      } else if (m.type === 'ack') this.ledger.acked(id, m.seq);
      else this.ledger.revoked(id);
      this.wake();
    });
    // The standby may still count on its lease (a cut it has not seen): it ends by itself.
    stream.onEnd(() => {
      this.streams.delete(id);
      this.wake();
    });
  }

  /**
   * A batch committed: undefined when no standby holds a lease (nothing to wait for), else
   * resolves once every leased standby acknowledged it or its lease ended. Never rejects.
   * `entries` gives the batch's WAL entries to push with its count (asked only when someone is leased).
   */
  published(entries?: () => PushedWal | undefined): Promise<void> | undefined {
    const seq = this.ledger.publish();
    const now = this.o.now();
    if (!this.ledger.anyLeased(now)) return undefined;
    const wal = entries?.();
    const push: LeaseDown = wal === undefined ? { type: 'push', seq } : { type: 'push', seq, wal };
    for (const { id } of this.ledger.waitingOn(seq, now)) this.streams.get(id)?.send(push);
    return this.until(() => this.ledger.waitingOn(seq, this.o.now()));
  }

  /**
   * Stepping down: no more grants, every leased standby told to drop its lease; resolves once
   * each acknowledged or its lease ended. open() grants again (the next active term).
   */
  revokeAll(): Promise<void> {
    this.ledger.close();
    for (const { id } of this.ledger.leased(this.o.now())) this.streams.get(id)?.send({ type: 'revoke' });
    return this.until(() => this.ledger.leased(this.o.now())) ?? Promise.resolve();
  }

  open(): void {
    this.ledger.open();
  }

  /** The standbys leased now (sys/ha-status, tests). */
  leasedCount(): number {
    return this.ledger.leased(this.o.now()).length;
  }

  /** Ends every stream (the cluster port closes). Leases end by themselves. */
  close(): void {
    for (const s of this.streams.values()) s.end();
    this.streams.clear();
  }

  /** Resolves once `pending()` is empty: checked on every message and when the earliest lease ends. */
  private until(pending: () => ReadonlyArray<{ readonly until: number }>): Promise<void> | undefined {
    const first = pending();
    if (first.length === 0) return undefined;
    return new Promise<void>((resolve) => {
      const check = (): void => {
        const left = pending();
        if (left.length === 0) {
          this.waiters.delete(check);
          resolve();
        } else this.arm(Math.min(...left.map((l) => l.until)));
      };
      this.waiters.add(check);
      this.arm(Math.min(...first.map((l) => l.until)));
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** A timer at `at` (the earliest lease's end) wakes the waiters; one timer for all. */
  private arm(at: number): void {
    if (this.timer !== undefined && this.timerAt <= at) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.wake();
      },
      Math.max(0, at - this.o.now()) + 1,
    );
  }
}
