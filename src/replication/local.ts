/**
 * Replication as seen on a node that is not (yet) in a replication set: status blocks with the
 * Merkle root, WAL position and maintenance epochs, and the reindex and Merkle-check operations.
 * The epochs are kept in a system record so they survive restarts.
 *
 *   const repl = new LocalReplication({ engine, now: Date.now, log });
 *   await repl.load();
 *   await repl.status('dr') // { mode: 'disabled', merkle_root: '…', last_wal: 12, … }
 */
import type { Kind } from '../core/replication/index.js';
import type { Logger } from 'pino';
import { InvalidRequest } from '../core/errors.js';
import { TREES, type CorruptionReport } from '../core/merkle.js';
import { RateEstimator, etaSeconds } from '../core/rate.js';

/** What this module needs from the storage engine. */
export interface MerkleEngine {
  lastGuard(): { index: bigint; hash: Buffer };
  merkleRoot(): Buffer;
  check(): Promise<CorruptionReport>;
  reindex(opts: { diff?: boolean; force?: boolean; skipFlush?: boolean; onProgress?: (done: number, total: number) => void }): Promise<{ warnings: string[] }>;
  getSystem(name: string): Promise<Buffer | undefined>;
  putSystem(name: string, value: Buffer | undefined): Promise<void>;
}

const META = 'replication-meta';

interface Meta {
  lastReindexEpoch: number;
  lastCorruptionCheckEpoch: number;
  corrupted: boolean;
}

type Reindex = { running: false } | { running: true; done: number; total: number; stage: string; rate: RateEstimator };

export class LocalReplication {
  private meta: Meta = { lastReindexEpoch: 0, lastCorruptionCheckEpoch: 0, corrupted: false };
  private reindexState: Reindex = { running: false };

  constructor(private readonly opts: { engine: MerkleEngine; now: () => number; log: Logger; role?: (kind: Kind) => Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined> }) {}

  async load(): Promise<void> {
    const raw = await this.opts.engine.getSystem(META);
    if (raw) this.meta = { ...this.meta, ...(JSON.parse(raw.toString('utf8')) as Partial<Meta>) };
  }

  private async save(): Promise<void> {
    await this.opts.engine.putSystem(META, Buffer.from(JSON.stringify(this.meta)));
  }

  /** The block for one kind: the node's own Merkle and WAL facts, then the role's fields over them. */
  async status(kind: Kind): Promise<Record<string, unknown>> {
    const guard = this.opts.engine.lastGuard();
    const r = this.reindexState;
    return {
      mode: 'disabled',
      state: 'idle',
      cluster_id: '',
      merkle_root: this.opts.engine.merkleRoot().toString('hex'),
      last_wal: Number(guard.index),
      corrupted_merkle_tree: this.meta.corrupted,
      last_reindex_epoch: String(this.meta.lastReindexEpoch),
      last_corruption_check_epoch: String(this.meta.lastCorruptionCheckEpoch),
      primary_cluster_addr: '',
      reindex_in_progress: r.running,
      // The ETA is null until progress was reported twice (rebuildIndex reports every 1000 keys).
      ...(r.running ? { reindex_stage: r.stage, reindex_building_progress: r.done, reindex_building_total: r.total, reindex_eta_seconds: r.total > 0 ? etaSeconds(r.total - r.done, r.rate.perSecond(this.opts.now())) : null } : {}),
      ...((await this.opts.role?.(kind)) ?? {}),
    };
  }

  async reindex(opts: { diff: boolean; force: boolean; skipFlush: boolean }): Promise<{ warnings: string[] }> {
    if (this.reindexState.running) throw new InvalidRequest('a reindex is already in progress');
    const state = { running: true as const, done: 0, total: 0, stage: 'building', rate: new RateEstimator({ windowMs: 30_000, minGapMs: 0 }) };
    state.rate.sample(this.opts.now(), 0);
    this.reindexState = state;
    const log = this.opts.log.child({ op: 'reindex' });
    log.info({ diff: opts.diff, force: opts.force, skip_flush: opts.skipFlush }, 'reindex started');
    let lastLogged = 0;
    try {
      const result = await this.opts.engine.reindex({
        diff: opts.diff,
        force: opts.force,
        skipFlush: opts.skipFlush,
        onProgress: (done, total) => {
          state.done = done;
          state.total = total;
          const now = this.opts.now();
          state.rate.sample(now, done);
          if (now - lastLogged >= 1000 || done === total) {
            lastLogged = now;
            log.info({ done, total }, 'reindex progress');
          }
        },
      });
      this.meta = { ...this.meta, lastReindexEpoch: Math.floor(this.opts.now() / 1000), corrupted: false };
      await this.save();
      log.info({ warnings: result.warnings.length }, 'reindex finished');
      return result;
    } finally {
      this.reindexState = { running: false };
    }
  }

  /** WIRE.md section 7: the Merkle corruption report. */
  async merkleCheck(): Promise<Record<string, unknown>> {
    const report = await this.opts.engine.check();
    const now = this.opts.now();
    const corrupted = report.corruptedRoot || TREES.some((t) => report.trees[t].corruptedSubtreeRoot || report.trees[t].corruptedPages.size > 0);
    this.meta = { ...this.meta, lastCorruptionCheckEpoch: Math.floor(now / 1000), corrupted };
    await this.save();
    const subtree = (t: 1 | 2) => {
      const s = report.trees[t];
      const pages = s.corruptedPages.size === 0
        ? null
        : Object.fromEntries([...s.corruptedPages].map(([page, f]) => [String(page), { corrupted: f.corrupted, subpages: f.subpages }]));
      return {
        tree_type: s.treeType,
        root_hash: s.rootHash.toString('base64'),
        corrupted_subtree_root: s.corruptedSubtreeRoot,
        corrupted_index_tuples_map: pages,
      };
    };
    return {
      merkle_corruption_report: {
        corrupted_root: report.corruptedRoot,
        last_corruption_check_epoch: new Date(now).toISOString(),
        corrupted_tree_map: { '1': subtree(1), '2': subtree(2) },
      },
    };
  }
}
