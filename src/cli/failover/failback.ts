/**
 * `tessera operator dr failback -old-primary=ADDR`: the old primary rejoins the new one (the node
 * at -address) as a DR secondary. Demote it if it is still a primary, issue a fresh secondary
 * token on the new primary, point the old one at it with update-primary (a newly demoted DR
 * secondary takes only a token; spec section 3), and wait until it streams.
 *
 * Idempotent like the failover: a node already demoted is not demoted again, one already attached
 * to the new primary is only waited on, one already streaming from it makes this a no-op.
 *
 *   const steps = await runFailback(ctx, flags, { oldPrimary: 'http://10.0.0.1:8200', timeoutMs: 120_000 });
 */
import type { ClientFlags, Context } from '../context.js';
import { StepRefused } from '../errors.js';
import { statusDisplay } from '../progress.js';
import { Goal, waitForRole } from '../wait.js';
import { tokenFromShares } from '../commands/token-generation.js';
import { field, peer, str } from './peers.js';
import { PROBE_TIMEOUT_MS } from './plan.js';
import { Outcome, operationTokenEndpoints, revokeGenerated, type StepResult } from './run.js';

/** Demote drains to connected secondaries for up to 30 s before it answers. */
const DEMOTE_TIMEOUT_MS = 60_000;

export interface FailbackInput {
  readonly oldPrimary: string;
  /** A DR operation token valid on the old primary once demoted; else shares are asked for. */
  readonly drToken?: string | undefined;
  /** The id the old primary rejoins under; unique on the new primary. */
  readonly secondaryId?: string | undefined;
  readonly timeoutMs: number;
}

export interface FailbackSummary {
  readonly primary: string;
  readonly secondary: string;
  readonly primary_cluster_addr: string;
  readonly steps: readonly StepResult[];
}

export async function runFailback(ctx: Context, flags: ClientFlags, input: FailbackInput): Promise<FailbackSummary> {
  const primary = ctx.client(flags).withWrapTtl(undefined);
  const ps = await primary.replication.kindStatus('dr');
  if (ps.mode !== 'primary') throw new StepRefused(`${primary.addr} is not a DR primary (dr mode: ${ps.mode}); run the failback against the new primary`);
  const clusterAddr = str(field(ps, 'primary_cluster_addr'));
  const old = peer(ctx, flags, input.oldPrimary, DEMOTE_TIMEOUT_MS);
  const steps: StepResult[] = [];
  const step = (name: string, outcome: Outcome, detail: string) => steps.push({ step: name, target: input.oldPrimary, outcome, detail });
  const display = statusDisplay(ctx.io.stderr);
  try {
    let os = await peer(ctx, flags, input.oldPrimary, PROBE_TIMEOUT_MS).replication.kindStatus('dr');
    const following = (): boolean => os.mode === 'secondary' && str(field(os, 'primary_cluster_addr')) === clusterAddr;
    if (following() && field(os, 'state') === 'stream-wals') {
      step('demote', Outcome.skipped, 'already a DR secondary');
      step('update-primary', Outcome.skipped, `already streaming from ${clusterAddr}`);
      return { primary: primary.addr, secondary: input.oldPrimary, primary_cluster_addr: clusterAddr, steps };
    }
    if (os.mode === 'primary') {
      display.note(`Demoting ${input.oldPrimary}...`);
      await old.write('sys/replication/dr/primary/demote', {});
      step('demote', Outcome.done, 'demoted');
      os = await old.replication.kindStatus('dr');
    } else if (os.mode === 'secondary') {
      step('demote', Outcome.skipped, 'already a DR secondary');
    } else {
      throw new StepRefused(`${input.oldPrimary} is neither a DR primary nor a DR secondary (dr mode: ${os.mode}); join it with secondary/enable instead (that wipes it)`);
    }
    if (following()) {
      step('update-primary', Outcome.skipped, `already attached to ${clusterAddr}`);
    } else {
      const id = input.secondaryId ?? `failback-${Date.now().toString(36)}`;
      const issued = await primary.write<Record<string, unknown>>('sys/replication/dr/primary/secondary-token', { id });
      const activation = issued?.wrap_info?.token ?? str(issued?.data?.['token']);
      if (activation === '') throw new StepRefused(`the new primary issued no secondary token for id ${id}`);
      const generated = input.drToken === undefined;
      const drToken = input.drToken ?? (await tokenFromShares(ctx, operationTokenEndpoints(old), { name: 'generate-dr-token', what: 'DR operation token' }));
      display.note(`Pointing ${input.oldPrimary} at ${clusterAddr} (secondary id ${id})...`);
      await old.write('sys/replication/dr/secondary/update-primary', { dr_operation_token: drToken, token: activation });
      step('update-primary', Outcome.done, `joined as ${id}`);
      if (generated) steps.push(await revokeGenerated(old, drToken));
    }
    await waitForRole(old, 'dr', { goal: Goal.streaming, primaryClusterAddrs: [clusterAddr] }, {
      timeoutMs: input.timeoutMs, intervalMs: ctx.io.pollIntervalMs ?? 500, display, label: 'old primary (dr)',
    });
    step('stream', Outcome.done, `streaming from ${clusterAddr}`);
    return { primary: primary.addr, secondary: input.oldPrimary, primary_cluster_addr: clusterAddr, steps };
  } finally {
    display.stop();
  }
}
