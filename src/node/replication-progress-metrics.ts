/**
 * The operator's replication gauges beyond mode and lag (replication-metrics.ts), read from the
 * same status snapshot at scrape time: heartbeat age on both ends, WAL headroom per secondary,
 * the secondary's phase, Merkle sync and catch-up progress with ETAs, reindex progress, and
 * counters of finished merkle-syncs and the keys they moved. deploy/alerts.yml alerts on them.
 * An unknown ETA is left out; "never at the current rate" is +Inf.
 *
 *   registerProgressGauges(registry, read);   // read(): this scrape's status per kind
 */
import { Counter, Gauge, type Registry } from 'prom-client';

import { num, statusGauges, type Snapshot } from './status-gauges.js';

/** Seconds since an RFC 3339 time; undefined when never (''). */
const ageSeconds = (v: unknown, now: number): number | undefined => {
  const t = typeof v === 'string' && v !== '' ? Date.parse(v) : NaN;
  return Number.isFinite(t) ? Math.max(0, (now - t) / 1000) : undefined;
};

/** An ETA or headroom in seconds: null in status means no bound at the current rate. */
const seconds = (v: unknown): number | undefined => (v === null ? Infinity : num(v));

const obj = (v: unknown): Record<string, unknown> | undefined => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : undefined);
const isSecondary = (d: Record<string, unknown>): boolean => d.mode === 'secondary' || d.mode === 'bootstrapping';

export function registerProgressGauges(registry: Registry, read: () => Promise<Snapshot[]>, now: () => number = Date.now): void {
  const registers = [registry];
  const { perKind, perSecondary } = statusGauges(registry, read);
  const syncCounter = (name: string, help: string, field: 'count' | 'fetched_keys' | 'deleted_keys') =>
    new Counter({
      name, help, labelNames: ['kind'], registers,
      async collect() {
        this.reset();
        for (const { kind, data } of await read()) {
          const v = num(obj(data.merkle_syncs)?.[field]);
          if (v !== undefined) this.inc({ kind }, v);
        }
      },
    });

  new Gauge({
    name: 'tessera_replication_state', help: 'Secondary: its phase (1 for stream-wals, merkle-diff, merkle-sync, idle or bootstrapping)', labelNames: ['kind', 'state'], registers,
    async collect() {
      this.reset();
      for (const { kind, data } of await read()) if (isSecondary(data)) this.set({ kind, state: String(data.state ?? 'idle') }, 1);
    },
  });
  perKind('tessera_replication_primary_heartbeat_age_seconds', 'Secondary: seconds since the last heartbeat exchanged with its primary', (d) => {
    const p = Array.isArray(d.primaries) ? obj(d.primaries[0]) : undefined;
    return isSecondary(d) ? ageSeconds(p?.last_heartbeat, now()) : undefined;
  });
  perSecondary('tessera_replication_secondary_heartbeat_age_seconds', 'Primary: seconds since the last heartbeat from the secondary', (s) => ageSeconds(s.last_heartbeat, now()));
  perSecondary('tessera_replication_secondary_wal_headroom_entries', 'Primary: entries it can still write before the secondary falls off the retained WAL', (s) => num(s.wal_headroom_entries));
  perSecondary('tessera_replication_secondary_wal_headroom_seconds', 'Primary: seconds until the secondary falls off the retained WAL at the recent write rate (+Inf while idle)', (s) => seconds(s.wal_headroom_seconds));
  perKind('tessera_replication_write_rate_entries_per_second', 'Primary: WAL entries written per second (60 s window)', (d) => num(d.write_rate_entries_per_sec));
  perKind('tessera_replication_merkle_sync_keys_total', 'Secondary in merkle-sync: conflicting keys to move', (d) => num(obj(d.merkle_sync_progress)?.sync_total_keys));
  perKind('tessera_replication_merkle_sync_keys_done', 'Secondary in merkle-sync: keys moved so far', (d) => num(obj(d.merkle_sync_progress)?.sync_progress));
  perKind('tessera_replication_merkle_sync_eta_seconds', 'Secondary in merkle-sync: seconds left at the observed rate (+Inf when stalled)', (d) => {
    const p = obj(d.merkle_sync_progress);
    return p && d.state === 'merkle-sync' ? seconds(p.eta_seconds) : undefined;
  });
  perKind('tessera_replication_catch_up_rate_entries_per_second', 'Secondary streaming behind: entries applied per second', (d) => num(obj(d.catch_up)?.rate_entries_per_sec));
  perKind('tessera_replication_catch_up_eta_seconds', 'Secondary streaming behind: seconds until caught up (+Inf when not closing the gap)', (d) => {
    const c = obj(d.catch_up);
    return c ? seconds(c.eta_seconds) : undefined;
  });
  syncCounter('tessera_replication_merkle_syncs_total', 'Secondary: merkle-syncs finished (since its replication loop started)', 'count');
  syncCounter('tessera_replication_merkle_sync_keys_fetched_total', 'Secondary: keys fetched by finished merkle-syncs', 'fetched_keys');
  syncCounter('tessera_replication_merkle_sync_keys_deleted_total', 'Secondary: keys deleted by finished merkle-syncs', 'deleted_keys');

  // Reindex is node-wide: read from the DR block (both kinds' blocks carry the same fields).
  const reindex = (name: string, help: string, pick: (d: Record<string, unknown>) => number | undefined) =>
    new Gauge({
      name, help, registers,
      async collect() {
        this.reset();
        const dr = (await read()).find((s) => s.kind === 'dr')?.data;
        const v = dr ? pick(dr) : undefined;
        if (v !== undefined) this.set(v);
      },
    });
  reindex('tessera_replication_reindex_in_progress', '1 while a reindex runs', (d) => (d.reindex_in_progress === true ? 1 : d.reindex_in_progress === false ? 0 : undefined));
  reindex('tessera_replication_reindex_keys_done', 'Reindex: keys rebuilt so far', (d) => (d.reindex_in_progress === true ? num(d.reindex_building_progress) : undefined));
  reindex('tessera_replication_reindex_keys_total', 'Reindex: keys to rebuild', (d) => (d.reindex_in_progress === true ? num(d.reindex_building_total) : undefined));
  reindex('tessera_replication_reindex_eta_seconds', 'Reindex: seconds left at the observed rate', (d) => (d.reindex_in_progress === true ? num(d.reindex_eta_seconds) : undefined));
}
