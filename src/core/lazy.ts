/**
 * A value made at its first use: `load` runs once, at the first call, and every caller gets the
 * same promise (a rejection included). For modules a node may never need, loaded by dynamic import
 * so that starting a node does not pay for them (pki.ts, storage/postgres.ts).
 *
 *   const loadPg = lazy(async () => (await import('pg')).default);
 *   const { Pool } = await loadPg();
 */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= load());
}
