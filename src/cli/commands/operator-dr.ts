/**
 * `tessera operator dr failover [-plan]` and `tessera operator dr failback`: a DR failover that
 * plans itself, runs every step idempotently, and shows progress (src/cli/failover/*).
 *
 *   tessera operator dr failover -address=$S -plan            # reachability, lag, RPO, verdict, commands
 *   tessera operator dr failover -address=$S -perf-secondary=$PS1
 *   tessera operator dr failback -address=$S -old-primary=$P
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, fromEnv, withClientFlags, withFormatFlags } from '../context.js';
import { runFailback } from '../failover/failback.js';
import { parsePerfTokens } from '../failover/perf-tokens.js';
import { makePlan, renderPlan } from '../failover/plan.js';
import { Outcome, runFailover, type StepResult } from '../failover/run.js';
import { Format, json, table } from '../output.js';
import { timeoutMs } from '../wait.js';

interface FailoverFlags extends ClientFlags, FormatFlags {
  readonly plan?: boolean;
  readonly drToken?: string;
  readonly perfSecondary: string[];
  readonly perfToken: string[];
  readonly primaryAddress?: string;
  readonly force?: boolean;
  readonly timeout: string;
}

interface FailbackFlags extends ClientFlags, FormatFlags {
  readonly oldPrimary: string;
  readonly drToken?: string;
  readonly secondaryId?: string;
  readonly timeout: string;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function register(parent: Command, ctx: Context): void {
  const dr = parent.command('dr').description('DR failover and failback, planned and idempotent');

  const failover = dr
    .command('failover')
    .description('Promote this DR secondary and move the performance secondaries onto it (-plan: only show what it would do)')
    .option('--plan', 'print the plan (primary reachability, lag, promote verdict, RPO, performance secondaries, commands) and change nothing')
    .option('--dr-token <token>', 'a DR operation token (or a pre-staged batch token) of this secondary (env TESSERA_DR_TOKEN); else unseal key shares are asked for')
    .option('--perf-secondary <addr>', 'API address of a performance secondary to move onto the new primary (repeatable)', collect, [])
    .option(
      '--perf-token <addr=token>',
      'a sudo token on a performance secondary, which has its own tokens: <its -perf-secondary address>=<token>, once per secondary (repeatable); ' +
        'a bare <token> is used for every secondary without its own (env TESSERA_PERF_TOKEN; else the CLI token)',
      collect,
      [],
    )
    .option('--primary-address <addr>', 'API address of the primary, when the secondary does not know it (default: its status primaries[0].api_address)')
    .option('--force', 'promote even when the secondary knows it is behind (loses those entries; see -plan)')
    .option('--timeout <duration>', 'how long each wait may take', '5m');
  withFormatFlags(withClientFlags(failover), false);
  example(
    failover,
    'tessera operator dr failover -address=$S -plan',
    'tessera operator dr failover -address=$S -plan -format=json',
    'printf "%s\\n" "$KEY1" "$KEY2" | tessera operator dr failover -address=$S -perf-secondary=$PS1',
    'tessera operator dr failover -address=$S -perf-secondary=$PS1 -perf-token=$PS1=$PS1_TOKEN -perf-secondary=$PS2 -perf-token=$PS2=$PS2_TOKEN',
    'TESSERA_DR_TOKEN=$BATCH tessera operator dr failover -address=$S -perf-secondary=$PS1',
  );
  failover.action(
    ctx.action(async (opts: FailoverFlags) => {
      try {
        const timeout = timeoutMs('-timeout', opts.timeout);
        // Checked before anything is sent: each secondary's token, or one without an address for all.
        const given = parsePerfTokens(opts.perfToken, opts.perfSecondary);
        const fallback = given.fallback ?? ctx.io.env['TESSERA_PERF_TOKEN'] ?? fromEnv(ctx.io.env, 'TOKEN');
        if (opts.plan) {
          const plan = await makePlan(ctx, opts, { primaryAddress: opts.primaryAddress, perfSecondaries: opts.perfSecondary });
          ctx.out(opts.format === Format.json ? json(plan) : renderPlan(plan));
          return 0;
        }
        const summary = await runFailover(ctx, opts, {
          drToken: opts.drToken ?? ctx.io.env['TESSERA_DR_TOKEN'] ?? undefined,
          perfTokens: { byAddress: given.byAddress, ...(fallback !== undefined ? { fallback } : {}) },
          perfSecondaries: opts.perfSecondary,
          force: opts.force ?? false,
          timeoutMs: timeout,
        });
        const warnings = summary.not_updated_ids.length > 0
          ? [`the new primary knows performance secondaries that were not moved: ${summary.not_updated_ids.join(', ')}; rerun with -perf-secondary=ADDR for each`]
          : [];
        if (opts.format === Format.json) ctx.out(json({ ...summary, warnings }));
        else {
          ctx.out(`Failover summary: ${summary.new_primary} is the primary (cluster address ${summary.primary_cluster_addr})\n\n${stepsTable(summary.steps)}`);
          for (const w of warnings) ctx.err(`WARNING: ${w}\n`);
        }
        return summary.steps.some((s) => s.outcome === Outcome.failed) ? 1 : 0;
      } catch (e) {
        return ctx.fail('failing over', e);
      }
    }),
  );

  const failback = dr
    .command('failback')
    .description('Make the old primary a DR secondary of this (new) primary: demote it, rejoin it by token, wait until it streams')
    .requiredOption('--old-primary <addr>', 'API address of the old primary')
    .option('--dr-token <token>', 'a DR operation token valid on the old primary once demoted (env TESSERA_DR_TOKEN); else unseal key shares are asked for')
    .option('--secondary-id <id>', 'the id it rejoins under (unique on the new primary; default failback-<time>)')
    .option('--timeout <duration>', 'how long the wait for streaming may take', '5m');
  withFormatFlags(withClientFlags(failback), false);
  example(failback, 'printf "%s\\n" "$KEY1" "$KEY2" | tessera operator dr failback -address=$S -old-primary=$P');
  failback.action(
    ctx.action(async (opts: FailbackFlags) => {
      try {
        const summary = await runFailback(ctx, opts, {
          oldPrimary: opts.oldPrimary,
          drToken: opts.drToken ?? ctx.io.env['TESSERA_DR_TOKEN'] ?? undefined,
          secondaryId: opts.secondaryId,
          timeoutMs: timeoutMs('-timeout', opts.timeout),
        });
        if (opts.format === Format.json) ctx.out(json(summary));
        else ctx.out(`Failback summary: ${summary.secondary} is a DR secondary streaming from ${summary.primary} (${summary.primary_cluster_addr})\n\n${stepsTable(summary.steps)}`);
        return summary.steps.some((s) => s.outcome === Outcome.failed) ? 1 : 0;
      } catch (e) {
        return ctx.fail('failing back', e);
      }
    }),
  );
}

function stepsTable(steps: readonly StepResult[]): string {
  return table(steps.map((s) => [`${s.step} ${s.target}`, `${s.outcome}: ${s.detail}`] as const), ['Step', 'Result']);
}
