/**
 * Last heartbeats kept across restarts, in one node-class record per role (they describe this
 * node's view of its peers, never replicated). Written throttled by SecondaryViews and the
 * secondary loop, not once per heartbeat.
 *
 *   const lastSeen = lastSeenRecord(() => core.store(), KIND_POLICY.dr.lastSeen.primary);
 *   await lastSeen.save({ east: Date.now() });
 */
import type { Store } from '../storage/store.js';
import type { LastSeenStore } from './secondary-views.js';

export function lastSeenRecord(store: () => Store, key: string): LastSeenStore {
  return {
    async load() {
      const raw = await store().get(key);
      if (!raw) return {};
      const parsed = JSON.parse(raw.toString('utf8')) as unknown;
      const out: Record<string, number> = Object.create(null) as Record<string, number>;
      if (parsed && typeof parsed === 'object') {
        for (const [id, ms] of Object.entries(parsed)) if (typeof ms === 'number' && Number.isFinite(ms)) out[id] = ms;
      }
      return out;
    },
    async save(lastSeen) {
      await store().commit([{ type: 'put', key, value: Buffer.from(JSON.stringify(lastSeen)) }]);
    },
  };
}
