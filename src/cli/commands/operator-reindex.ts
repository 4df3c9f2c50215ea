/**
 * `tessera operator reindex [-diff] [-force] [-skip-flush]`: rebuilds the Merkle index from
 * stored data (POST sys/replication/reindex; with -dr-operation-token, the DR secondary endpoint).
 * While the POST is in flight it polls sys/replication/status and draws a progress bar on stderr,
 * only when stderr is a terminal, so stdout stays clean for scripts. Prints the warnings at the end.
 */
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { setTimeout as delay } from 'node:timers/promises';
import type { ReplicationStatus, TesseraClient } from '../../api/index.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { Format, json } from '../output.js';
import type { Output } from '../io.js';

interface ReindexFlags extends ClientFlags, FormatFlags {
  readonly diff?: boolean;
  readonly force?: boolean;
  readonly skipFlush?: boolean;
  readonly drOperationToken?: string;
}

export interface Progress {
  readonly done: number;
  readonly total: number;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('reindex')
    .description('Rebuild the Merkle index from stored data (can take long on large data sets)')
    .option('--diff', 'slower reindex with a key-level check, to diagnose issues')
    .option('--force', 'full reindex that scans only data available in storage')
    .option('--skip-flush', 'skip the tree flush stage (repeat the reindex if the node dies before it flushes)')
    .option('--dr-operation-token <token>', 'reindex a DR secondary through its DR operation token');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera operator reindex', 'tessera operator reindex -diff -dr-operation-token="$DR_TOKEN"');
  cmd.action(
    ctx.action(async (opts: ReindexFlags) => {
      try {
        const client = ctx.client(opts);
        const request = client.replication.reindex({
          diff: opts.diff ?? false,
          force: opts.force ?? false,
          skipFlush: opts.skipFlush ?? false,
          drOperationToken: opts.drOperationToken,
        });
        const { warnings } = ctx.io.stderr.isTTY
          ? await withProgressBar(request, client, ctx.io.stderr, ctx.io.pollIntervalMs ?? 500)
          : await request;
        if (opts.format === Format.json) {
          ctx.out(json({ warnings }));
          return 0;
        }
        for (const w of warnings) ctx.out(`WARNING: ${w}\n`);
        ctx.out('Success! Reindex complete.\n');
        return 0;
      } catch (e) {
        return ctx.fail('reindexing', e);
      }
    }),
  );
}

/** Reindex progress from a status body: the top level first, then the DR and performance blocks. */
export function progressOf(status: ReplicationStatus): Progress | undefined {
  for (const block of [status, status.dr, status.performance] as const) {
    const rec = block as Record<string, unknown>;
    const done = rec['reindex_building_progress'];
    const total = rec['reindex_building_total'];
    if (typeof done === 'number' && typeof total === 'number' && total > 0) return { done, total };
  }
  return undefined;
}

/**
 * Polls status every `intervalMs` until `request` settles, drawing what it learns. Polling errors
 * are ignored: the bar is a courtesy and must never fail the reindex it reports on.
 */
async function withProgressBar<T>(request: Promise<T>, client: TesseraClient, stderr: Output, intervalMs: number): Promise<T> {
  const settled = request.then(
    () => true,
    () => true,
  );
  const bar = new cliProgress.SingleBar(
    {
      stream: stderr as unknown as NodeJS.WritableStream,
      format: 'Reindexing [{bar}] {percentage}% | {value}/{total} keys',
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const stop = new AbortController();
  let started = false;
  try {
    for (;;) {
      const waited = delay(intervalMs, false, { signal: stop.signal }).catch(() => false);
      if (await Promise.race([settled, waited])) break;
      const progress = await client.replication.status().then(progressOf, () => undefined);
      if (!progress) continue;
      if (!started) {
        bar.start(progress.total, progress.done);
        started = true;
      } else {
        bar.setTotal(progress.total);
        bar.update(progress.done);
      }
    }
  } finally {
    stop.abort();
    if (started) {
      // A successful reindex has covered every key, whatever the last poll saw.
      if (await request.then(() => true, () => false)) bar.update(bar.getTotal());
      bar.stop();
    }
  }
  return request;
}
