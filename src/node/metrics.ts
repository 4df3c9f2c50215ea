/**
 * Prometheus metrics for one node (one Registry per node: two nodes in one process must not share
 * the global registry). Gauges whose value lives elsewhere are read at scrape time.
 *
 *   const m = new NodeMetrics({ lastWal: () => engine.lastGuard().index, ... });
 *   m.observeRequest({ method: 'GET', route: 'secret', status: 200, seconds: 0.001 });
 *   await m.render(); // text exposition
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { registerHaGauges, type HaGaugeSource } from './ha-metrics.js';
import { registerReplicationGauges, type StatusSource } from './replication-metrics.js';

export interface MetricSources {
  lastWal(): number;
  walRetainedEntries(): number;
  walRetainedBytes(): number;
}

export class NodeMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly latency: Histogram<'method' | 'route'>;
  private readonly batchTxns: Histogram;
  private readonly batchBytes: Histogram;
  private readonly merkleFlush: Histogram;
  private readonly forwarded: Histogram<'kind' | 'side' | 'secondary_id' | 'outcome'>;
  private replicationStatus: StatusSource | undefined;
  private ha: HaGaugeSource | undefined;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'tessera_process_' });
    this.requests = new Counter({ name: 'tessera_http_requests_total', help: 'HTTP requests by method, route and status', labelNames: ['method', 'route', 'status'], registers });
    this.latency = new Histogram({
      name: 'tessera_http_request_duration_seconds', help: 'HTTP request latency', labelNames: ['method', 'route'], registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    });
    this.batchTxns = new Histogram({ name: 'tessera_group_commit_batch_transactions', help: 'Transactions per fsynced batch (group commit)', registers, buckets: [1, 2, 4, 8, 16, 32, 64, 128] });
    this.batchBytes = new Histogram({ name: 'tessera_group_commit_batch_bytes', help: 'Bytes per fsynced batch', registers, buckets: [1024, 4096, 16384, 65536, 262144, 1048576] });
    this.merkleFlush = new Histogram({ name: 'tessera_merkle_flush_pages', help: 'Merkle pages written per batch', registers, buckets: [1, 2, 4, 8, 16, 32, 64] });
    this.forwarded = new Histogram({
      name: 'tessera_replication_forwarded_write_duration_seconds',
      help: 'Forwarded writes: side="forwarded" on the performance secondary (until the answer, its own apply included), side="executed" on the primary that ran it',
      labelNames: ['kind', 'side', 'secondary_id', 'outcome'], registers,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    });
    new Gauge({ name: 'tessera_wal_last_index', help: 'Index of the last WAL entry (last_wal)', registers, collect() { this.set(sources.lastWal()); } });
    new Gauge({ name: 'tessera_wal_retained_entries', help: 'WAL entries retained', registers, collect() { this.set(sources.walRetainedEntries()); } });
    new Gauge({ name: 'tessera_wal_retained_bytes', help: 'WAL bytes retained', registers, collect() { this.set(sources.walRetainedBytes()); } });
    registerReplicationGauges(this.registry, () => this.replicationStatus);
    registerHaGauges(this.registry, () => this.ha);
  }

  /** Replication is wired after the registry exists: its status feeds the replication gauges. */
  bindReplication(status: StatusSource): void {
    this.replicationStatus = status;
  }

  /** HA is wired after the registry exists: its controller feeds the HA gauges (none: HA is off). */
  bindHa(controller: HaGaugeSource | undefined): void {
    this.ha = controller;
  }

  /**
   * The counter and histogram children of each label set seen (the labels are bounded: methods,
   * the routes' first segments, statuses): prom-client hashes a label object on every call, which
   * showed in the read path's profile; a child is looked up by one string instead.
   */
  private readonly requestChildren = new Map<string, { readonly count: { inc(): void }; readonly time: { observe(v: number): void } }>();

  observeRequest(info: { method: string; route: string; status: number; seconds: number }): void {
    const key = `${info.method} ${info.route} ${info.status}`;
    let c = this.requestChildren.get(key);
    if (c === undefined) {
      c = { count: this.requests.labels(info.method, info.route, String(info.status)), time: this.latency.labels(info.method, info.route) };
      this.requestChildren.set(key, c);
    }
    c.count.inc();
    c.time.observe(info.seconds);
  }

  observeBatch(info: { txns: number; bytes: number; merklePages?: number }): void {
    this.batchTxns.observe(info.txns);
    this.batchBytes.observe(info.bytes);
    if (info.merklePages !== undefined) this.merkleFlush.observe(info.merklePages);
  }

  observeForwarded(f: { side: 'forwarded' | 'executed'; secondaryId: string; seconds: number; ok: boolean }): void {
    this.forwarded.observe({ kind: 'performance', side: f.side, secondary_id: f.secondaryId, outcome: f.ok ? 'ok' : 'error' }, f.seconds);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
