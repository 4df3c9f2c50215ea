/**
 * Last heartbeats (and a secondary's applied index then) kept across restarts, in one node-class
 * record per role (they describe this node's view of its peers, never replicated). Written throttled by SecondaryViews and the
 * secondary loop, not once per heartbeat.
 *
 *   const lastSeen = lastSeenRecord(() => core.store(), KIND_POLICY.dr.lastSeen.primary);
 *   await lastSeen.save({ east: { ms: Date.now(), applied: 42n } });
 */
import type { Store } from '../storage/store.js';
import type { LastSeen, LastSeenStore } from './secondary-views.js';

export function lastSeenRecord(store: () => Store, key: string): LastSeenStore {
  return {
    async load() {
      const raw = await store().get(key);
      if (!raw) return {};
      const parsed = JSON.parse(raw.toString('utf8')) as unknown;
      const out: Record<string, LastSeen> = Object.create(null) as Record<string, LastSeen>;
      if (parsed && typeof parsed === 'object') {
        for (const [id, entry] of Object.entries(parsed)) {
          const seen = entryOf(entry);
          if (seen !== undefined) out[id] = seen;
        }
      }
      return out;
    },
    async save(lastSeen) {
      const out: Record<string, { ms: number; applied?: string }> = Object.create(null) as Record<string, { ms: number; applied?: string }>;
      for (const [id, { ms, applied }] of Object.entries(lastSeen)) out[id] = applied === undefined ? { ms } : { ms, applied: applied.toString() };
      await store().commit([{ type: 'put', key, value: Buffer.from(JSON.stringify(out)) }]);
    },
  };
}

/** One entry as stored: `{ms, applied}` (applied a decimal string), or a bare ms number as records before it held. */
function entryOf(entry: unknown): LastSeen | undefined {
  if (typeof entry === 'number') return Number.isFinite(entry) ? { ms: entry } : undefined;
  if (!entry || typeof entry !== 'object') return undefined;
  const { ms, applied } = entry as { ms?: unknown; applied?: unknown };
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return undefined;
  return typeof applied === 'string' && /^\d{1,20}$/.test(applied) ? { ms, applied: BigInt(applied) } : { ms };
}
