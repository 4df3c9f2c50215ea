/**
 * In-memory Backend for unit tests and the contract suite: a sorted array of keys with binary
 * search. Snapshots copy the map (tests only; cost is fine at test sizes).
 *
 *   const b = new MemoryBackend();
 */
import type { Backend, BatchOp, RangeOptions, Snapshot } from './backend.js';

function compare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function inRange(key: string, r: RangeOptions): boolean {
  if (r.gte !== undefined && compare(key, r.gte) < 0) return false;
  if (r.gt !== undefined && compare(key, r.gt) <= 0) return false;
  if (r.lt !== undefined && compare(key, r.lt) >= 0) return false;
  if (r.lte !== undefined && compare(key, r.lte) > 0) return false;
  return true;
}

class MapView {
  constructor(protected readonly data: Map<string, Buffer>) {}

  async get(key: string): Promise<Buffer | undefined> {
    const v = this.data.get(key);
    return v === undefined ? undefined : Buffer.from(v);
  }

  async *iterate(range: RangeOptions): AsyncIterable<[string, Buffer]> {
    const keys = [...this.data.keys()].filter((k) => inRange(k, range)).sort(compare);
    if (range.reverse) keys.reverse();
    const limited = range.limit !== undefined && range.limit >= 0 ? keys.slice(0, range.limit) : keys;
    for (const k of limited) {
      const v = this.data.get(k);
      if (v !== undefined) yield [k, Buffer.from(v)];
    }
  }
}

export class MemoryBackend extends MapView implements Backend {
  private closed = false;
  /** Number of batches written; tests use it to observe group commit. */
  batches = 0;

  constructor() {
    super(new Map());
  }

  async batch(ops: readonly BatchOp[], _options: { sync: boolean }): Promise<void> {
    this.assertOpen();
    this.batches++;
    for (const op of ops) {
      if (op.type === 'put') this.data.set(op.key, Buffer.from(op.value));
      else this.data.delete(op.key);
    }
  }

  async snapshot(): Promise<Snapshot> {
    this.assertOpen();
    const view = new MapView(new Map(this.data));
    return Object.assign(view, { close: async () => {} });
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('backend is closed');
  }
}
