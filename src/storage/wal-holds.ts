/**
 * Holds on the WAL tail: entries from a held index on are kept past the retention bounds
 * (wal_max_entries, wal_max_bytes) until the hold moves on or is released, but never past
 * `HOLD_BYTES_FACTOR` × wal_max_bytes, so a hold cannot fill the disk. The replication layer holds
 * the entries a secondary streams next after a reconcile (src/replication/catch-up-holds.ts).
 *
 *   const h = holds.hold(1200n);   // keep entries >= 1200
 *   h.move(1500n);                 // the secondary applied up to 1499
 *   h.release();
 *   holds.keepFrom();              // the lowest held index, or undefined
 */
export const HOLD_BYTES_FACTOR = 4;

export interface WalHold {
  /** The first index kept. */
  readonly from: bigint;
  /** Keep entries from `from` on instead (a hold only moves forward). */
  move(from: bigint): void;
  release(): void;
}

export class WalHolds {
  private readonly held = new Map<symbol, bigint>();

  hold(from: bigint): WalHold {
    const id = Symbol('wal-hold');
    this.held.set(id, from);
    const held = this.held;
    return {
      get from() {
        return held.get(id) ?? from;
      },
      move: (next) => {
        const cur = this.held.get(id);
        if (cur !== undefined && next > cur) this.held.set(id, next);
      },
      release: () => {
        this.held.delete(id);
      },
    };
  }

  keepFrom(): bigint | undefined {
    let min: bigint | undefined;
    for (const v of this.held.values()) if (min === undefined || v < min) min = v;
    return min;
  }
}
