/**
 * Write forwarding at both ends, as one unit. On a performance secondary, `forward` sends a write
 * of replicated data to its primary (the HTTP dispatcher calls it through the node's services).
 * On a primary, `executorFor` hands the performance driver the executor of its secondaries'
 * forwarded writes: the HTTP dispatcher's (bound once with `serve`), held to the secondary's
 * paths filter, audited (one line: secondary, operation, status; never path, arguments or
 * values), and answered only once connected DR secondaries hold the write. Each forwarded write's
 * latency is observed on both ends. While replication is stopped (`running` false) forwarding
 * refuses with Unavailable and the primary serves no executor.
 *
 *   const writes = new ForwardedWrites({ drivers, scopeFor, lastIndex, log, audit, observe });
 *   writes.serve(forwardedExecutor(services, routes, onInternal));   // primary, once routes exist
 *   const { reply, warnings } = await writes.forward(request);        // secondary
 */
import type { Logger } from 'pino';
import { Unavailable } from '../core/errors.js';
import type { ForwardScope } from '../core/paths-filter.js';
import type { Kind } from '../core/replication/index.js';
import { audited } from './audit.js';
import type { ReplicationDriver } from './driver.js';
import type { ForwardOutcome, ForwardReply, ForwardRequest } from './transport.js';

/** The primary's runner of one forwarded write: the HTTP dispatcher, with the secondary as authority. */
export type ForwardExecutor = (secondaryId: string, req: ForwardRequest, scope: ForwardScope) => Promise<Omit<ForwardReply, 'commitIndex'>>;

/** One forwarded write: `forwarded` on the performance secondary that sent it, `executed` on the primary. */
export interface ForwardedObservation {
  readonly side: 'forwarded' | 'executed';
  readonly secondaryId: string;
  readonly seconds: number;
  readonly ok: boolean;
}

export interface ForwardedWritesOptions {
  readonly drivers: Readonly<Record<Kind, ReplicationDriver>>;
  /** The forward scope of a secondary: its paths filter, as the primary serves it. */
  readonly scopeFor: (secondaryId: string) => Promise<ForwardScope>;
  /** The last committed WAL index of this node. */
  readonly lastIndex: () => bigint;
  readonly log: Logger;
  /** The operator audit trail (audit.ts): one line per forwarded write. */
  readonly audit: Logger;
  readonly observe?: (o: ForwardedObservation) => void;
  /** Longest a forwarded write's answer waits for connected DR secondaries (default 5000 ms). */
  readonly drConfirmMs?: number;
}

export class ForwardedWrites {
  /** Whether replication runs on this node (the unit's start/stop). */
  running = true;
  private executor: ForwardExecutor | undefined;
  private readonly audited: { execute(run: ForwardExecutor, id: string, req: ForwardRequest): Promise<ForwardReply> };

  constructor(private readonly o: ForwardedWritesOptions) {
    this.audited = audited(o.audit, { execute: (run: ForwardExecutor, id: string, req: ForwardRequest) => this.execute(run, id, req) }, {
      execute: {
        op: 'performance/forward',
        refused: (r) => r.kind === 'error',
        detail: ([, id, req], r) => ({ secondary_id: id, operation: req.operation, request_id: req.requestId, ...(r ? { status: r.status } : {}) }),
      },
    });
  }

  /** Binds the primary's executor (the HTTP dispatcher's); routes exist only after the unit. */
  serve(run: ForwardExecutor): void {
    this.executor = run;
  }

  /** The performance driver's hook: the executor of forwarded writes, while one is bound and replication runs. */
  readonly executorFor = (): ((id: string, req: ForwardRequest) => Promise<ForwardReply>) | undefined => {
    const run = this.executor;
    if (!run || !this.running) return undefined;
    return async (id, req) => {
      const started = performance.now();
      let ok = false;
      try {
        const r = await this.audited.execute(run, id, req);
        ok = r.kind !== 'error';
        return r;
      } finally {
        this.o.observe?.({ side: 'executed', secondaryId: id, seconds: (performance.now() - started) / 1000, ok });
      }
    };
  };

  /** A performance secondary's write of replicated data, sent to its primary. */
  readonly forward = async (req: ForwardRequest): Promise<ForwardOutcome> => {
    if (!this.running) throw new Unavailable('replication is stopped on this node: the write was not forwarded to the primary, and nothing was written');
    const perf = this.o.drivers.performance;
    const started = performance.now();
    let ok = false;
    try {
      const out = await perf.forward(req);
      ok = out.reply.kind !== 'error';
      return out;
    } finally {
      const s = perf.isLoaded ? perf.state : undefined;
      this.o.observe?.({ side: 'forwarded', secondaryId: s?.mode === 'secondary' ? (s.secondaryId ?? '') : '', seconds: (performance.now() - started) / 1000, ok });
    }
  };

  /** Runs one forwarded write, then holds its answer until connected DR secondaries hold it. */
  private async execute(run: ForwardExecutor, id: string, req: ForwardRequest): Promise<ForwardReply> {
    // Held to the same paths filter as everything this primary sends that secondary.
    const answer = await run(id, req, await this.o.scopeFor(id));
    // Every write of the request is committed by now: the last index covers them all.
    const commitIndex = this.o.lastIndex();
    this.o.log.debug({ secondary_id: id, operation: req.operation, status: answer.status }, 'forwarded write executed');
    // A forwarded write is acknowledged only once every connected DR secondary holds it, so a
    // DR failover loses none (REPLICATION.md 8); a DR secondary that is partitioned stops
    // counting at its heartbeat timeout, which bounds this wait.
    const waitMs = this.o.drConfirmMs ?? 5_000;
    if (answer.kind !== 'error' && !(await this.o.drivers.dr.secondariesApplied(commitIndex, waitMs))) {
      this.o.log.warn({ secondary_id: id, commit_index: commitIndex.toString(), wait_ms: waitMs }, 'forwarded write acknowledged before a connected DR secondary confirmed it');
    }
    return { ...answer, commitIndex };
  }
}
