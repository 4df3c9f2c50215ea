/**
 * What a primary knows about each secondary, for status and for the demote drain. The open WAL
 * stream is the truth about connection: a secondary is connected from the moment its stream opens
 * (that counts as its first heartbeat) until it ends, or until its heartbeats stop for longer than
 * `heartbeatTimeoutMs` (a paused or partitioned peer whose TCP connection has not died yet). A
 * secondary reconciling (merkle-diff/sync) has no stream but heartbeats, and counts as connected.
 *
 *   const views = new SecondaryViews({ now, heartbeatTimeoutMs: 3000, lastSeen });
 *   await views.load();                   // last heartbeats persisted before a restart
 *   const done = views.streamOpened('east'); ...; done();
 *   views.connected(views.get('east')!)   // true
 *
 * The last heartbeat of each id is persisted (a node-class record) when a stream opens or ends, on
 * close, and otherwise at most once per `persistEveryMs`: it survives a restart without a write
 * per heartbeat.
 */
import type { Guard } from './transport.js';

export interface SecondaryView {
  readonly id: string;
  /** What the secondary says its API and cluster addresses are (Bootstrap, heartbeats): claims. */
  apiAddr: string;
  clusterAddr: string;
  /** What this primary observed: the peer address of the secondary's latest call. */
  peerAddr: string;
  lastHeartbeatMs: number;
  heartbeatDurationMs: number;
  clockSkewMs: number;
  applied: Guard;
  /**
   * The applied index the last-seen record held from before this node's start, until the
   * secondary reports its own (a stream or a heartbeat): what status shows for a secondary that
   * has not come back yet, rather than nothing applied. Never used to count a secondary as having
   * applied an entry (drains and forwarded-write waits read `applied`).
   */
  recordedApplied?: bigint;
  /** As the secondary last reported it; see `displayState`. */
  state: string;
  streams: number;
  /**
   * Commit time (ms) of the oldest entry this secondary has not applied, as far as this primary
   * knows (its last heartbeat, and commits since); 0 while it has applied everything. Its lag in
   * time is now minus this, so it keeps growing while the secondary is gone.
   */
  missingSinceMs: number;
}

/** One peer's entry in the last-seen record: its last heartbeat (ms since the Unix epoch) and, for a secondary, its applied index then. */
export interface LastSeen {
  readonly ms: number;
  readonly applied?: bigint;
}

/** Where last heartbeats are kept across restarts: id -> LastSeen. */
export interface LastSeenStore {
  load(): Promise<Record<string, LastSeen>>;
  save(lastSeen: Record<string, LastSeen>): Promise<void>;
}

export interface SecondaryViewsOptions {
  readonly now: () => number;
  /** A secondary whose last heartbeat is older than this is disconnected. Default 3000 ms. */
  readonly heartbeatTimeoutMs?: number;
  /** Least time between two persists caused by heartbeats alone. Default 30 s. */
  readonly persistEveryMs?: number;
  readonly lastSeen?: LastSeenStore;
  /** A failed persist is reported here, never thrown into a call. */
  readonly onPersistError?: (e: unknown) => void;
}

const RECONCILING = new Set(['merkle-diff', 'merkle-sync']);

export class SecondaryViews {
  private readonly views = new Map<string, SecondaryView>();
  private readonly listeners = new Set<() => void>();
  private lastPersistMs = 0;
  private persisting: Promise<void> = Promise.resolve();

  constructor(private readonly o: SecondaryViewsOptions) {}

  get heartbeatTimeoutMs(): number {
    return this.o.heartbeatTimeoutMs ?? 3000;
  }

  /**
   * The last heartbeats persisted before a restart, of the ids `member` still counts as
   * secondaries of this set; the others (an older set's, before a disable and enable) are
   * dropped from the record too.
   */
  async load(member: (id: string) => boolean = () => true): Promise<void> {
    const seen = (await this.o.lastSeen?.load()) ?? {};
    let dropped = false;
    for (const [id, { ms, applied }] of Object.entries(seen)) {
      if (!member(id)) {
        dropped = true;
        continue;
      }
      const v = this.view(id);
      if (v.lastHeartbeatMs !== 0) continue;
      v.lastHeartbeatMs = ms;
      if (applied !== undefined && v.applied.index === 0n) v.recordedApplied = applied;
    }
    if (dropped) this.persist(true);
  }

  all(): SecondaryView[] {
    return [...this.views.values()];
  }

  get(id: string): SecondaryView | undefined {
    return this.views.get(id);
  }

  /** The view of `id`, created on first contact. */
  view(id: string): SecondaryView {
    let v = this.views.get(id);
    if (!v) {
      v = { id, apiAddr: '', clusterAddr: '', peerAddr: '', lastHeartbeatMs: 0, heartbeatDurationMs: 0, clockSkewMs: 0, applied: { index: 0n, hash: Buffer.alloc(32) }, state: 'idle', streams: 0, missingSinceMs: 0 };
      this.views.set(id, v);
    }
    return v;
  }

  forget(id: string): void {
    this.views.delete(id);
    this.changed();
    this.persist(true);
  }

  /** Connected: a live stream (or a reconciliation) and a heartbeat within the timeout. */
  connected(v: SecondaryView, now = this.o.now()): boolean {
    const live = v.streams > 0 || RECONCILING.has(v.state);
    return live && v.lastHeartbeatMs > 0 && now - v.lastHeartbeatMs < this.heartbeatTimeoutMs;
  }

  /** What status shows: a secondary that is not connected is idle, whatever it last said. */
  displayState(v: SecondaryView, now = this.o.now()): string {
    if (!this.connected(v, now)) return 'idle';
    return v.streams > 0 ? 'stream-wals' : v.state;
  }

  /** A WAL stream of `id` opened: connected now. Call the returned function when it ends. */
  streamOpened(id: string, applied: Guard): () => void {
    const v = this.view(id);
    v.streams++;
    v.state = 'stream-wals';
    v.applied = applied.index > v.applied.index ? applied : v.applied;
    v.recordedApplied = undefined;
    v.lastHeartbeatMs = this.o.now();
    this.changed();
    this.persist(true);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      v.streams--;
      if (v.streams === 0) v.state = 'idle';
      this.changed();
      this.persist(true);
    };
  }

  /** A heartbeat from `id` was received; `update` fills in what it carried. */
  heartbeat(id: string, update: (v: SecondaryView) => void): SecondaryView {
    const v = this.view(id);
    update(v);
    v.recordedApplied = undefined;
    // After its stream ended, a late heartbeat must not make a departed secondary look streaming.
    if (v.streams === 0 && !RECONCILING.has(v.state)) v.state = 'idle';
    this.changed();
    this.persist(false);
    return v;
  }

  /** Resolves at the next change of any view, or after `ms`. */
  nextChange(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        this.listeners.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.listeners.add(done);
    });
  }

  /** Writes the last heartbeats now (close, shutdown). */
  async flush(): Promise<void> {
    this.persist(true);
    await this.persisting;
  }

  private changed(): void {
    for (const l of [...this.listeners]) l();
  }

  private persist(force: boolean): void {
    const store = this.o.lastSeen;
    if (!store) return;
    const now = this.o.now();
    if (!force && now - this.lastPersistMs < (this.o.persistEveryMs ?? 30_000)) return;
    this.lastPersistMs = now;
    const seen: Record<string, LastSeen> = Object.create(null) as Record<string, LastSeen>;
    for (const v of this.views.values()) if (v.lastHeartbeatMs > 0) seen[v.id] = { ms: v.lastHeartbeatMs, applied: lastApplied(v) };
    // Serialized: an older map never overwrites a newer one.
    this.persisting = this.persisting.then(() => store.save(seen)).catch((e: unknown) => this.o.onPersistError?.(e));
  }
}

/** The applied index status shows: the secondary's report, else the record's from before a restart. */
export function lastApplied(v: SecondaryView): bigint {
  return v.recordedApplied ?? v.applied.index;
}
