/**
 * HA gauges (issue 19): what sys/leader says, for Prometheus, read from the HA controller at scrape
 * time. On a node without HA only `tessera_ha_enabled 0` has a sample; the others have none, so a
 * cluster-wide sum or max over them counts HA nodes alone.
 *
 *   tessera_ha_enabled                  1 with HA (storage "postgresql" with ha_enabled), else 0
 *   tessera_ha_active                   1 on the node that serves as the active node, else 0
 *   tessera_ha_mode{mode}               1 for the mode the node is in (sealed, standby, active, cooldown), 0 for the others
 *   tessera_ha_lease_age_seconds        active node only: time since its last accepted lease renew
 *   tessera_ha_lease_ttl_seconds        the lock row's lifetime (an active node stops before its lease age reaches it)
 *   tessera_ha_epoch                    the active node's lease epoch as this node last read it (grows at every takeover)
 *   tessera_ha_read_leases              active node only: performance standbys holding a read lease from it now
 *   tessera_ha_read_lease_seconds       standby only: what is left of its read lease (0: none; it follows before every answer)
 *   tessera_ha_standby_follows_total    standby only: the follows its read barrier made before answering (none while its lease is fresh)
 *
 *   registerHaGauges(registry, () => controller);   // undefined: the node has no HA
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The modes of src/core/ha/lease.ts, each a `mode` label value of `tessera_ha_mode`. */
export const HA_MODES = ['sealed', 'standby', 'active', 'cooldown'] as const;

/** What the gauges read of the HA controller (src/ha/controller.ts `HaController` is one). */
export interface HaGaugeSource {
  view(): { readonly mode: string; readonly leaseAgeMs: number | null; readonly epoch: number; readonly leaderRow?: { readonly epoch: number } | undefined };
  isActive(): boolean;
  readonly leaseOptions: { readonly ttlMs: number };
  /** Read leases (src/core/ha/read-lease.ts), where the node has them. */
  readLeases?(): { readonly granted: number; readonly heldMs: number; readonly follows: number };
}

export function registerHaGauges(registry: Registry, source: () => HaGaugeSource | undefined): void {
  const registers = [registry];
  /** An unlabelled gauge with a sample only while `value` answers a number. */
  const optional = (name: string, help: string, value: (ha: HaGaugeSource) => number | undefined): void => {
    new Gauge({
      name, help, registers,
      collect() {
        const ha = source();
        const v = ha === undefined ? undefined : value(ha);
        if (v === undefined) this.remove();
        else this.set(v);
      },
    });
  };
  new Gauge({
    name: 'tessera_ha_enabled', help: '1 when the node runs HA inside its cluster (storage "postgresql" with ha_enabled), else 0', registers,
    collect() {
      this.set(source() === undefined ? 0 : 1);
    },
  });
  optional('tessera_ha_active', 'HA: 1 on the node serving as the active node of its cluster, else 0', (ha) => (ha.isActive() ? 1 : 0));
  new Gauge({
    name: 'tessera_ha_mode', help: 'HA: 1 for the mode the node is in (sealed, standby, active, cooldown), 0 for the others', labelNames: ['mode'], registers,
    collect() {
      this.reset();
      const ha = source();
      if (ha === undefined) return;
      const mode = ha.view().mode;
      for (const m of HA_MODES) this.set({ mode: m }, m === mode ? 1 : 0);
    },
  });
  optional('tessera_ha_lease_age_seconds', 'HA, active node only: seconds since the send time of its last accepted lease renew', (ha) => {
    const age = ha.view().leaseAgeMs;
    return age === null ? undefined : age / 1000;
  });
  optional('tessera_ha_lease_ttl_seconds', 'HA: lifetime of the lock row in seconds (the active node stops before its lease age reaches it)', (ha) => ha.leaseOptions.ttlMs / 1000);
  const standby = (ha: HaGaugeSource): boolean => !ha.isActive() && ha.view().mode !== 'sealed';
  optional('tessera_ha_read_leases', 'HA, active node only: performance standbys holding a read lease from this node now', (ha) =>
    ha.isActive() ? ha.readLeases?.().granted : undefined,
  );
  optional('tessera_ha_read_lease_seconds', 'HA, standby only: seconds left of its read lease from the active node (0: none; it reads the database before every answer)', (ha) => {
    const r = standby(ha) ? ha.readLeases?.() : undefined;
    return r === undefined ? undefined : r.heldMs / 1000;
  });
  new Counter({
    name: 'tessera_ha_standby_follows_total', help: 'HA, standby only: reads of the shared database its read barrier made before answering (none while its read lease is fresh)', registers,
    collect() {
      this.reset();
      const ha = source();
      const r = ha !== undefined && standby(ha) ? ha.readLeases?.() : undefined;
      if (r !== undefined) this.inc(r.follows);
      else this.remove();
    },
  });
  optional('tessera_ha_epoch', 'HA: the lease epoch of the active node as this node last read it (it grows at every takeover; 0: none seen yet)', (ha) => {
    const v = ha.view();
    return Math.max(v.epoch, v.leaderRow?.epoch ?? 0);
  });
}
