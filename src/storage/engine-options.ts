/**
 * What StorageEngine.open and StorageEngine.reindex take; engine.ts re-exports both.
 *
 *   const engine = await StorageEngine.open(backend, { walMaxEntries: 100_000, walMaxBytes: 256 << 20 });
 *   await engine.reindex({ skipFlush: true });
 */
import type { WriteLimits } from './contract.js';
import type { ReadCacheLimits } from './read-cache.js';
import type { ReindexOptions } from './merkle-check.js';

export interface EngineOptions {
  readonly walMaxEntries: number;
  readonly walMaxBytes: number;
  readonly now?: () => number;
  /** Called after each durable commit batch (for metrics). */
  readonly onBatch?: (info: { txns: number; ops: number; bytes: number; merklePages: number }) => void;
  /** Longest a dirty page record waits under load before a batch flushes it (default 1000 ms). */
  readonly pageFlushIntervalMs?: number;
  /**
   * reload() may forget a storage fault: true only for a backend whose failed batch left no torn
   * state (PostgreSQL's transactions), so re-reading settles what was written. LevelDB: false.
   */
  readonly settlesOnReload?: boolean;
  /** The read cache's bounds (read-cache.ts `readCacheLimits`: Vault's `cache_size`, `disable_cache`); DEFAULT_READ_CACHE unless given. */
  readonly readCache?: ReadCacheLimits;
  /** The key and value contract commits are checked against (contract.ts); WRITE_LIMITS unless given (tests change it). */
  readonly limits?: WriteLimits;
}

export interface ReindexRequest extends ReindexOptions {
  /**
   * Return before the page records and roots are written; they are flushed by a later job on the
   * chain (`flushed` settles when done). If the process dies before that, the stored index is only
   * partly rebuilt: check() reports it and reindex must be run again.
   */
  readonly skipFlush?: boolean;
}
