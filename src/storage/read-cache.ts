/**
 * A bounded cache of live values (ciphertext) by logical key, kept coherent with the commit path:
 * the engine hands it every durable batch's data ops, and a read fills an entry only if no batch
 * that became durable while the read was in flight wrote that key (it might have read the value
 * from before); past one such batch it does not fill at all.
 *
 *   const cache = new ReadCache();
 *   const v = await cache.read(key, () => backend.get(Keys.value(key)));
 *   cache.applied(ops);        // inside the engine, once a batch is durable
 *
 * Absence is cached too. Eviction is second chance (CLOCK): a hit only marks its entry, and the
 * entry oldest in the map is evicted unless marked, in which case it moves to the newest end
 * unmarked (a hit costs no reordering: the hot path reads three entries per request). Returned
 * buffers are shared with the cache: callers must not modify them.
 */
import type { WalOp } from '../core/wal.js';

export interface ReadCacheLimits {
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** Larger values are read through, never cached. */
  readonly maxValueBytes: number;
}

export const DEFAULT_READ_CACHE: ReadCacheLimits = { maxEntries: 8192, maxBytes: 16 << 20, maxValueBytes: 64 << 10 };

/** Vault's server settings for this cache: `disable_cache`, and `cache_size` (entries). */
export interface ReadCacheSettings {
  readonly disabled?: boolean;
  readonly entries?: number;
}

/**
 * The limits for Vault's server settings: `disable_cache` turns the cache off (every read goes to
 * storage), `cache_size` is its number of entries (at most 0 means the default, as in Vault). The
 * byte bound stays: Vault bounds entries only, this cache both.
 */
export function readCacheLimits(o: ReadCacheSettings): ReadCacheLimits {
  if (o.disabled === true) return { ...DEFAULT_READ_CACHE, maxEntries: 0 };
  return o.entries !== undefined && o.entries > 0 ? { ...DEFAULT_READ_CACHE, maxEntries: o.entries } : DEFAULT_READ_CACHE;
}

export class ReadCache {
  /** Map order is insertion (or second-chance) order. value null = absent. */
  private readonly entries = new Map<string, { readonly value: Buffer | null; used: boolean }>();
  private bytes = 0;
  /** Bumped by every durable batch. */
  private generation = 0;
  /** The keys of the last durable batch. */
  private lastWritten: ReadonlySet<string> = new Set();

  constructor(private readonly limits: ReadCacheLimits = DEFAULT_READ_CACHE) {}

  async read(key: string, load: () => Promise<Buffer | undefined>): Promise<Buffer | undefined> {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      hit.used = true;
      return hit.value ?? undefined;
    }
    const generation = this.generation;
    const value = await load();
    // Fill only if no batch since the read began could have changed the key: none, or just one
    // that did not write it (under load a batch completes during most reads).
    const behind = this.generation - generation;
    if (behind === 0 || (behind === 1 && !this.lastWritten.has(key))) this.set(key, value ?? null);
    return value;
  }

  /** A batch with these data ops is durable: keys already cached take their new values. */
  applied(ops: readonly WalOp[]): void {
    this.generation++;
    this.lastWritten = new Set(ops.map((op) => op.key));
    for (const op of ops) if (this.entries.has(op.key)) this.set(op.key, op.type === 'put' ? op.value : null);
  }

  /** Forgets everything (e.g. after the data was wiped). */
  clear(): void {
    this.generation += 2;
    this.entries.clear();
    this.bytes = 0;
  }

  get size(): number {
    return this.entries.size;
  }

  private set(key: string, value: Buffer | null): void {
    this.drop(key);
    if (this.limits.maxEntries === 0 || (value !== null && value.length > this.limits.maxValueBytes)) return;
    this.entries.set(key, { value, used: false });
    this.bytes += value?.length ?? 0;
    // An entry moved to the end comes round again in this loop unmarked: it ends.
    for (const [k, slot] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) break;
      if (slot.used && k !== key) {
        slot.used = false;
        this.entries.delete(k);
        this.entries.set(k, slot);
      } else this.drop(k);
    }
  }

  private drop(key: string): void {
    const old = this.entries.get(key);
    if (old === undefined) return;
    this.entries.delete(key);
    this.bytes -= old.value?.length ?? 0;
  }
}
