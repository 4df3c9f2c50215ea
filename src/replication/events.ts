/**
 * Replication events: every operation and state change of either kind (enable, demote, tokens,
 * activation, promote, filters, Merkle sync, connection changes, verification mismatches) as one
 * record with a per-node monotonic id. Each is one JSON log line (`event: 'replication'`), kept in
 * a bounded in-memory history (the newest `capacity`), and handed to live subscribers (the
 * `sys/replication/events` stream). Detail fields are picked by the emitter and must hold no
 * token or secret: nothing here filters them.
 *
 *   const events = new ReplicationEvents({ log, now: Date.now });
 *   events.emit('dr', 'mode-changed', { from: 'disabled', to: 'primary' });
 *   for await (const item of events.follow({ after: 0, signal, heartbeatMs: 15_000 })) ...
 */
import type { Logger } from 'pino';
import type { Kind } from '../core/replication/index.js';

export interface ReplicationEvent {
  readonly id: number;
  /** RFC 3339. */
  readonly time: string;
  readonly kind: Kind;
  readonly type: string;
  readonly [detail: string]: unknown;
}

/** What an emitter of one kind needs (the driver, its loop, its streamer). */
export type EmitEvent = (type: string, detail?: Record<string, unknown>, level?: 'info' | 'warn' | 'error') => void;

/** What `follow` yields: an event, or a heartbeat when nothing happened for `heartbeatMs`. */
export type FollowItem = { readonly event: ReplicationEvent } | { readonly heartbeat: true };

export const DEFAULT_EVENT_CAPACITY = 500;

/** Detail keys an emitter may not overwrite. */
const RESERVED = new Set(['id', 'time', 'kind', 'type']);

export class ReplicationEvents {
  private readonly ring: ReplicationEvent[] = [];
  private nextId = 1;
  private readonly subscribers = new Set<(e: ReplicationEvent) => void>();
  /** Ends every open `follow` (the node seals: its streams were authorized by tokens it can no longer check). */
  private readonly enders = new Set<() => void>();
  readonly capacity: number;

  constructor(private readonly o: { log?: Logger; now: () => number; capacity?: number }) {
    this.capacity = Math.max(1, o.capacity ?? DEFAULT_EVENT_CAPACITY);
  }

  /**
   * Records an event without logging it, for a caller that writes the log line itself (the audit
   * trail puts the event's fields on its own line, so an operation is one line, not two).
   */
  record(kind: Kind, type: string, detail: Record<string, unknown> = {}): ReplicationEvent {
    const safe: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(detail)) if (!RESERVED.has(k) && v !== undefined) safe[k] = v;
    const event: ReplicationEvent = { id: this.nextId++, time: new Date(this.o.now()).toISOString(), kind, type, ...safe };
    this.ring.push(event);
    if (this.ring.length > this.capacity) this.ring.splice(0, this.ring.length - this.capacity);
    for (const fn of [...this.subscribers]) {
      try {
        fn(event);
      } catch {
        // A subscriber's failure is its own; the event is recorded and the others still get it.
      }
    }
    return event;
  }

  /** Records and logs one event (level `error` for a verification mismatch, else `info`). */
  emit(kind: Kind, type: string, detail: Record<string, unknown> = {}, level: 'info' | 'warn' | 'error' = 'info'): ReplicationEvent {
    const e = this.record(kind, type, detail);
    this.o.log?.[level](logFields(e), `replication event ${kind} ${type}`);
    return e;
  }

  /** An emitter bound to one kind. */
  emitter(kind: Kind): EmitEvent {
    return (type, detail, level) => void this.emit(kind, type, detail, level);
  }

  /** The history, oldest first; only events after `after` when given. */
  history(after = 0): ReplicationEvent[] {
    return this.ring.filter((e) => e.id > after);
  }

  /** Ends every open `follow`; later ones are unaffected. */
  endFollowers(): void {
    for (const end of [...this.enders]) end();
  }

  /** Live subscribers (open streams), for tests and diagnostics. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  subscribe(fn: (e: ReplicationEvent) => void): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /**
   * The history after `after`, then live events as they happen, with a heartbeat after every
   * `heartbeatMs` of silence; ends when `signal` aborts. Events recorded while the history is
   * replayed are not lost (the subscription starts first) and never repeated (ids only grow).
   * Also ends at `endFollowers()`.
   */
  async *follow(o: { after?: number; signal: AbortSignal; heartbeatMs: number }): AsyncGenerator<FollowItem> {
    const queue: ReplicationEvent[] = [];
    let wake: (() => void) | undefined;
    const unsubscribe = this.subscribe((e) => {
      queue.push(e);
      wake?.();
    });
    let ended = false;
    const onAbort = (): void => wake?.();
    const end = (): void => {
      ended = true;
      wake?.();
    };
    o.signal.addEventListener('abort', onAbort);
    this.enders.add(end);
    const over = (): boolean => ended || o.signal.aborted;
    try {
      let last = o.after ?? 0;
      for (const e of this.history(last)) {
        if (over()) return;
        last = e.id;
        yield { event: e };
      }
      while (!over()) {
        const next = queue.shift();
        if (next !== undefined) {
          if (next.id <= last) continue;
          last = next.id;
          yield { event: next };
          continue;
        }
        const beat = await new Promise<boolean>((resolve) => {
          const t = setTimeout(() => resolve(true), o.heartbeatMs);
          wake = () => {
            clearTimeout(t);
            resolve(false);
          };
        });
        wake = undefined;
        if (beat && !over()) yield { heartbeat: true };
      }
    } finally {
      unsubscribe();
      this.enders.delete(end);
      o.signal.removeEventListener('abort', onAbort);
    }
  }
}

/** The log line of an event: `event: 'replication'` and the event's fields (`event_id`, not `id`). */
export function logFields(e: ReplicationEvent): Record<string, unknown> {
  const { id, time: _time, type, ...rest } = e;
  return { event: 'replication', event_id: id, event_type: type, ...rest };
}
