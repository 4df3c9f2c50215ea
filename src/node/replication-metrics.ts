/**
 * Replication gauges for every role, a DR secondary included: per kind (mode, last WAL, lag) and,
 * on a primary, per secondary (connected, lag in entries and ms). Values are read from the same
 * status the `sys/replication/:kind/status` endpoints answer, at scrape time, so the two can
 * never disagree.
 *
 *   registerReplicationGauges(registry, () => statusOf);   // statusOf(kind) -> status `data`
 */
import { Gauge, type Registry } from 'prom-client';
import { KINDS, type Kind } from '../core/replication/index.js';
import { registerProgressGauges } from './replication-progress-metrics.js';
import { num, statusGauges, type Snapshot } from './status-gauges.js';

export type StatusSource = (kind: Kind) => Promise<Record<string, unknown>>;

/**
 * Registers the gauges; `source()` answers undefined until replication is wired (the registry
 * is built before it). A kind whose status cannot be read (sealed node) is left out of a scrape.
 */
export function registerReplicationGauges(registry: Registry, source: () => StatusSource | undefined): void {
  const registers = [registry];
  let pending: Promise<Snapshot[]> | undefined;
  // Every gauge's collect() runs in one scrape: they share one read of the status per scrape.
  const read = (): Promise<Snapshot[]> => {
    pending ??= (async () => {
      const status = source();
      if (!status) return [];
      const out: Snapshot[] = [];
      for (const kind of KINDS) {
        try {
          out.push({ kind, data: await status(kind) });
        } catch {
          // Sealed, or storage failed: the scrape still answers with what it can.
        }
      }
      return out;
    })().finally(() => queueMicrotask(() => (pending = undefined)));
    return pending;
  };
  const { perKind, perSecondary } = statusGauges(registry, read);
  new Gauge({
    name: 'tessera_replication_mode', help: 'Replication role of this node per kind (1 for the mode it is in)', labelNames: ['kind', 'mode'], registers,
    async collect() {
      this.reset();
      for (const { kind, data } of await read()) this.set({ kind, mode: String(data.mode ?? 'unknown') }, 1);
    },
  });
  perKind('tessera_replication_last_wal', 'Last WAL index of this node, per replication kind', (d) => num(d.last_wal));
  perKind('tessera_replication_last_remote_wal', 'Secondary: last WAL index of the primary applied here', (d) => (d.mode === 'secondary' ? num(d.last_remote_wal) : undefined));
  perKind('tessera_replication_lag_entries', 'Secondary: entries behind its primary; primary: the largest lag of its secondaries', (d) => num(d.lag_entries));
  perKind('tessera_replication_lag_ms', 'Secondary: milliseconds behind its primary; primary: the largest lag of its secondaries', (d) => num(d.lag_ms));
  perKind('tessera_replication_last_merkle_sync_bytes', 'Secondary: payload bytes the last Merkle reconcile received from the primary', (d) => num(d.last_merkle_sync_bytes));
  perKind('tessera_replication_verification_mismatch', 'Secondary: 1 when its Merkle root differed from its primary\'s at the same WAL index at the latest comparison', (d) => (d.mode === 'secondary' ? (d.verification_mismatch === true ? 1 : 0) : undefined));
  perKind('tessera_replication_verification_repairs', 'Secondary: Merkle diff and syncs it started to repair a verification mismatch, since its replication loop started', (d) => (d.mode === 'secondary' ? num(d.verification_repairs) : undefined));
  perKind('tessera_replication_last_verified_wal', 'Secondary: last WAL index at which its Merkle root matched its primary\'s (0: never)', (d) => (d.mode === 'secondary' ? num(d.last_verified_wal) : undefined));
  perSecondary('tessera_replication_secondary_connected', 'Primary: 1 while the secondary streams, 0 otherwise', (s) => (s.connection_status === 'connected' ? 1 : 0));
  perSecondary('tessera_replication_secondary_lag_entries', 'Primary: WAL entries the secondary has not applied', (s) => num(s.lag_entries));
  perSecondary('tessera_replication_secondary_lag_ms', 'Primary: milliseconds the secondary is behind', (s) => num(s.lag_ms));
  // Heartbeat age, WAL headroom, phase, progress and ETAs, reconcile counters (same snapshot).
  registerProgressGauges(registry, read);
}
