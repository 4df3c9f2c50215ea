/**
 * Gauges whose values are picked from a status snapshot at scrape time, per kind and per
 * secondary: the one mechanism behind replication-metrics.ts and replication-progress-metrics.ts.
 *
 *   const { perKind, perSecondary } = statusGauges(registry, read);
 *   perKind('tessera_replication_lag_entries', 'help', (d) => num(d.lag_entries));
 */
import { Gauge, type Registry } from 'prom-client';
import type { Kind } from '../core/replication/index.js';

export interface Snapshot {
  readonly kind: Kind;
  readonly data: Record<string, unknown>;
}

/** A finite number from a JSON number or numeric string; undefined otherwise (the sample is left out). */
export const num = (v: unknown): number | undefined => {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(n) ? n : undefined;
};

type Pick = (d: Record<string, unknown>) => number | undefined;

export function statusGauges(registry: Registry, read: () => Promise<Snapshot[]>) {
  const registers = [registry];
  /** One sample per kind whose status gives a value. */
  const perKind = (name: string, help: string, pick: Pick) =>
    new Gauge({
      name, help, labelNames: ['kind'], registers,
      async collect() {
        this.reset();
        for (const { kind, data } of await read()) {
          const v = pick(data);
          if (v !== undefined) this.set({ kind }, v);
        }
      },
    });
  /** One sample per secondary a primary's status lists (`secondaries[]`, labelled by node_id). */
  const perSecondary = (name: string, help: string, pick: Pick) =>
    new Gauge({
      name, help, labelNames: ['kind', 'secondary_id'], registers,
      async collect() {
        this.reset();
        for (const { kind, data } of await read()) {
          const list = Array.isArray(data.secondaries) ? (data.secondaries as Record<string, unknown>[]) : [];
          for (const s of list) {
            const v = pick(s);
            if (v !== undefined) this.set({ kind, secondary_id: String(s.node_id ?? '') }, v);
          }
        }
      },
    });
  return { perKind, perSecondary };
}
