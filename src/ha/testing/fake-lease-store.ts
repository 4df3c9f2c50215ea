/**
 * An in-memory LeaseStore (the port of src/core/ha/lease-store.ts) for unit tests of src/ha: one
 * database (`FakeLeaseDb`: the lock row, its epoch counter, the member table) timed by an injected
 * clock, and a client per node (`db.connect()`) that a test can cut off. It answers as the
 * PostgreSQL store (postgres-lease.ts) does; test/support/lease-store-contract.ts holds both to it.
 *
 *   const clock = new FakeClock();
 *   const db = new FakeLeaseDb(() => clock.now());
 *   const a = db.connect();                       // node a's client
 *   a.unreachable = 'connection refused';         // every call of a rejects until cleared
 *   db.row                                        // the lock row as stored (tests may read it)
 *
 * The fence is a synchronous check (`FakeGuard`): `commitUnder(guard)` runs it as the data
 * backend would run the PostgreSQL guard inside its commit, and answers the refusal, if any.
 */
import { FENCE_REFUSALS, LeaseLost, type AcquireResult, type EchoMeasures, type FenceState, type LeaseCandidate, type LeaseMember, type LeaseRow, type LeaseStore, type MemberFailure } from '../../core/ha/lease-store.js';
import { Unavailable } from '../../core/errors.js';

/** The fake's fence: undefined when the commit may land, else why it may not. */
export interface FakeGuard {
  check(): string | undefined;
}

/** The refusal of a commit made under `guard`, or undefined when it lands. */
export function commitUnder(guard: FakeGuard): Promise<string | undefined> {
  return Promise.resolve(guard.check());
}

interface StoredRow extends LeaseRow {
  /** ms on the db clock; the row is live while now < validUntil. */
  readonly validUntil: number;
}

interface StoredMember {
  readonly me: LeaseCandidate;
  readonly lastEcho: number;
  readonly failure: MemberFailure | undefined;
  readonly measured?: EchoMeasures;
}

const memberOf = (m: StoredMember): LeaseMember => ({
  nodeId: m.me.holder, hostname: m.me.hostname, apiAddr: m.me.apiAddr, clusterAddr: m.me.clusterAddr, version: m.me.version, lastEcho: new Date(m.lastEcho), instance: m.me.instance,
  ...(m.failure !== undefined ? { activationFailure: m.failure } : {}),
  echoDurationMs: m.measured?.echoDurationMs ?? 0,
  ...(m.measured !== undefined ? { localTime: new Date(m.measured.localTime) } : {}),
  redundancyZone: m.me.redundancyZone ?? '',
});

const rowOf = (r: StoredRow): LeaseRow => ({ holder: r.holder, epoch: r.epoch, apiAddr: r.apiAddr, clusterAddr: r.clusterAddr });

/** The shared database of a fake cluster. */
export class FakeLeaseDb {
  row: StoredRow | undefined;
  private lastEpoch = 0;
  readonly memberRows = new Map<string, StoredMember>();

  constructor(readonly now: () => number) {}

  connect(): FakeLeaseStore {
    return new FakeLeaseStore(this);
  }

  isLive(): boolean {
    return this.row !== undefined && this.row.validUntil > this.now();
  }

  nextEpoch(): number {
    this.lastEpoch += 1;
    return this.lastEpoch;
  }
}

/** One node's client of a FakeLeaseDb. */
export class FakeLeaseStore implements LeaseStore<FakeGuard> {
  /** When set, every call rejects with this reason (the database is unreachable from this node). */
  unreachable: string | undefined;
  /** Calls made, by method name (acquire, renew, ...). */
  readonly calls = new Map<string, number>();

  constructor(readonly db: FakeLeaseDb) {}

  /** Answers after a microtask, as a store across a connection would; rejects while unreachable. */
  private async call<T>(name: string, body: () => T): Promise<T> {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
    await Promise.resolve();
    if (this.unreachable !== undefined) throw new Unavailable(this.unreachable);
    return body();
  }

  acquire(me: LeaseCandidate, ttlMs: number, graceMs?: number): Promise<AcquireResult> {
    return this.call('acquire', (): AcquireResult => {
      const db = this.db;
      const now = db.now();
      const row = db.row;
      if (row !== undefined && db.isLive() && (row.holder !== me.holder || graceMs !== undefined)) return { won: false, leader: rowOf(row) };
      const own = row?.holder === me.holder;
      const freeLongEnough = row === undefined || row.validUntil <= now - (own ? 2 : 1) * (graceMs ?? 0);
      if (!freeLongEnough && !(graceMs === undefined && own)) return { won: false, leader: undefined };
      const epoch = db.nextEpoch();
      db.row = { holder: me.holder, epoch, apiAddr: me.apiAddr, clusterAddr: me.clusterAddr, validUntil: now + ttlMs };
      return { won: true, epoch };
    });
  }

  private holds(holder: string, epoch: number): boolean {
    const row = this.db.row;
    return row !== undefined && row.holder === holder && row.epoch === epoch;
  }

  renew(holder: string, epoch: number, ttlMs: number): Promise<boolean> {
    return this.call('renew', () => this.prolong(holder, epoch, ttlMs, false));
  }

  extend(holder: string, epoch: number, ttlMs: number): Promise<boolean> {
    return this.call('extend', () => this.prolong(holder, epoch, ttlMs, true));
  }

  private prolong(holder: string, epoch: number, ttlMs: number, onlyLive: boolean): boolean {
    const row = this.db.row;
    if (row === undefined || !this.holds(holder, epoch) || (onlyLive && !this.db.isLive())) return false;
    this.db.row = { ...row, validUntil: this.db.now() + ttlMs };
    return true;
  }

  release(holder: string, epoch: number): Promise<void> {
    return this.call('release', () => {
      const row = this.db.row;
      if (row !== undefined && this.holds(holder, epoch)) this.db.row = { ...row, validUntil: Math.min(row.validUntil, this.db.now()) };
    });
  }

  leader(): Promise<LeaseRow | undefined> {
    return this.call('leader', () => (this.db.row !== undefined && this.db.isLive() ? rowOf(this.db.row) : undefined));
  }

  echo(me: LeaseCandidate, staleMs: number, failure?: MemberFailure, measured?: EchoMeasures): Promise<LeaseMember | undefined> {
    return this.call('echo', () => {
      const now = this.db.now();
      const m = this.db.memberRows.get(me.holder);
      if (m !== undefined && m.me.instance !== me.instance && m.lastEcho > now - staleMs) return memberOf(m);
      this.db.memberRows.set(me.holder, { me, lastEcho: now, failure, ...(measured !== undefined ? { measured } : {}) });
      return undefined;
    });
  }

  members(maxAgeMs: number): Promise<LeaseMember[]> {
    return this.call('members', () => {
      const since = this.db.now() - maxAgeMs;
      return [...this.db.memberRows.values()]
        .filter((m) => m.lastEcho > since)
        .sort((x, y) => x.lastEcho - y.lastEcho || (x.me.holder < y.me.holder ? -1 : x.me.holder > y.me.holder ? 1 : 0))
        .map(memberOf);
    });
  }

  fence(current: () => FenceState, onFenced: (epoch: number) => void): FakeGuard {
    return {
      check: () => {
        const s = current();
        if (s.mode === 'standby') return FENCE_REFUSALS.standby;
        if (s.mode === 'sealed') return this.db.isLive() ? FENCE_REFUSALS.sealed : undefined;
        if (this.holds(s.holder, s.epoch) && this.db.isLive()) return undefined;
        onFenced(s.epoch);
        return new LeaseLost(s.epoch).message;
      },
    };
  }

  async close(): Promise<void> {
    this.unreachable = 'the lease store is closed';
  }
}
