/**
 * `tessera operator dr failover` (without -plan): promote this DR secondary, wait until it takes
 * writes, then move every performance secondary it can reach onto it (update-primary with
 * `update_primary_addrs`, as the spec advises for performance secondaries), and summarize.
 *
 * Every step first looks at where things are, so a failover interrupted half-way is finished by
 * running it again: a node already primary is not promoted (and no DR operation token is asked
 * for), a performance secondary already streaming from the new primary is left alone.
 *
 *   const summary = await runFailover(ctx, flags, { perfSecondaries: [addr], perfTokens: parsePerfTokens([`${addr}=${token}`], [addr]), force: false, timeoutMs: 120_000 });
 */
import { ApiError, type TesseraClient } from '../../api/index.js';
import type { ClientFlags, Context } from '../context.js';
import { StepRefused } from '../errors.js';
import { statusDisplay, type StatusDisplay } from '../progress.js';
import { Goal, waitForRole } from '../wait.js';
import { tokenFromShares } from '../commands/token-generation.js';
import { field, oneLine, peer, statusOrUndefined, str } from './peers.js';
import { perfTokenFor, type PerfTokens } from './perf-tokens.js';
import { PROBE_TIMEOUT_MS } from './plan.js';

/** How long one write to another node may take (update-primary probes addresses over gRPC). */
const WRITE_TIMEOUT_MS = 30_000;

export interface FailoverInput {
  /** A DR operation token (or pre-staged batch token); without one, shares are asked for. */
  readonly drToken?: string | undefined;
  /** A sudo token on each performance secondary (their tokens are local); the CLI's token where none is given. */
  readonly perfTokens: PerfTokens;
  readonly perfSecondaries: readonly string[];
  readonly force: boolean;
  readonly timeoutMs: number;
}

export const Outcome = { done: 'done', skipped: 'skipped', failed: 'failed' } as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

export interface StepResult {
  readonly step: string;
  readonly target: string;
  readonly outcome: Outcome;
  readonly detail: string;
}

export interface FailoverSummary {
  readonly new_primary: string;
  readonly primary_cluster_addr: string;
  readonly steps: readonly StepResult[];
  /** Performance secondary ids the new primary knows of that no step moved (address not given or unreachable). */
  readonly not_updated_ids: readonly string[];
}

export async function runFailover(ctx: Context, flags: ClientFlags, input: FailoverInput): Promise<FailoverSummary> {
  const client = ctx.client(flags).withWrapTtl(undefined);
  const steps: StepResult[] = [];
  const display = statusDisplay(ctx.io.stderr);
  const poll = { timeoutMs: input.timeoutMs, intervalMs: ctx.io.pollIntervalMs ?? 500, display };
  try {
    // 1. Promote, unless already done.
    const before = await client.replication.kindStatus('dr');
    if (before.mode === 'primary') {
      steps.push({ step: 'promote', target: client.addr, outcome: Outcome.skipped, detail: 'already a DR primary' });
    } else if (before.mode === 'secondary') {
      const generated = input.drToken === undefined;
      const token = input.drToken ?? (await tokenFromShares(ctx, operationTokenEndpoints(client), { name: 'generate-dr-token', what: 'DR operation token' }));
      display.note(`Promoting ${client.addr}${input.force ? ' (force)' : ''}...`);
      try {
        await client.write('sys/replication/dr/secondary/promote', { dr_operation_token: token, ...(input.force ? { force: true } : {}) });
      } catch (e) {
        if (e instanceof ApiError && (e.status === 400 || e.status === 503) && !input.force) {
          throw new StepRefused(`promote was refused: ${e.errors.join('; ')}. Run \`tessera operator dr failover -plan\` to see the RPO, then rerun with -force to accept it`);
        }
        throw e;
      }
      steps.push({ step: 'promote', target: client.addr, outcome: Outcome.done, detail: input.force ? 'promoted with force' : 'promoted' });
      // A token made from shares here is never shown to anyone; it cannot be revoked now (a
      // primary refuses operation-token/delete), and no one holds it.
      if (generated) display.note('The DR operation token made from the shares was used once and never shown.');
    } else {
      throw new StepRefused(`${client.addr} is neither a DR secondary nor a DR primary (dr mode: ${before.mode}); nothing to fail over to`);
    }

    // 2. The new primary takes writes: DR primary running and sys/health active.
    await waitForRole(client, 'dr', { goal: Goal.running }, { ...poll, label: 'new primary (dr)' });
    await waitActive(client, input.timeoutMs, poll.intervalMs);
    let perf = await statusOrUndefined(client, 'performance');
    const moving = input.perfSecondaries.length > 0 || (perf?.mode === 'primary' && ((field(perf, 'known_secondaries') as string[] | undefined)?.length ?? 0) > 0);
    if (moving && perf?.mode !== 'primary') perf = await waitForRole(client, 'performance', { goal: Goal.running }, { ...poll, label: 'new primary (performance)' });
    const clusterAddr = str(field(perf, 'primary_cluster_addr')) || str(field(await client.replication.kindStatus('dr'), 'primary_cluster_addr'));
    display.note(`New primary ${client.addr} accepts writes (cluster address ${clusterAddr}).`);

    // 3. Performance secondaries follow it.
    const moved = new Set<string>();
    for (const addr of input.perfSecondaries) {
      const r = await movePerfSecondary(ctx, flags, addr, clusterAddr, input, display);
      if (r.id !== '') moved.add(r.id);
      steps.push(r.step);
    }
    const known = perf?.mode === 'primary' ? ((field(perf, 'known_secondaries') as string[] | undefined) ?? []) : [];
    return { new_primary: client.addr, primary_cluster_addr: clusterAddr, steps, not_updated_ids: known.filter((id) => !moved.has(id)) };
  } finally {
    display.stop();
  }
}

function operationTokenEndpoints(client: TesseraClient) {
  const api = client.replication;
  return {
    status: () => api.operationTokenStatus(),
    start: (o: { otp?: string; pgpKey?: string }) => api.operationTokenStart(o),
    cancel: () => api.operationTokenCancel(),
    update: (key: string, nonce: string) => api.operationTokenUpdate(key, nonce),
  };
}

export { operationTokenEndpoints };

/** Revokes a DR operation token this run generated; a failure is reported, not thrown. */
export async function revokeGenerated(client: TesseraClient, token: string): Promise<StepResult> {
  try {
    await client.replication.operationTokenDelete(token);
    return { step: 'revoke-token', target: client.addr, outcome: Outcome.done, detail: 'the DR operation token made from shares was revoked' };
  } catch (e) {
    return { step: 'revoke-token', target: client.addr, outcome: Outcome.failed, detail: `could not revoke the DR operation token made from shares: ${oneLine(e)}` };
  }
}

async function waitActive(client: TesseraClient, timeoutMs: number, intervalMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await client.sys.health().then((h) => h.status, () => 0);
    if (status === 200) return;
    if (Date.now() >= deadline) throw new StepRefused(`${client.addr} is primary but sys/health answers ${status || 'nothing'}, not 200 (active)`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** One performance secondary onto the new primary; never throws (the summary reports it). */
async function movePerfSecondary(
  ctx: Context, flags: ClientFlags, addr: string, clusterAddr: string, input: FailoverInput, display: StatusDisplay,
): Promise<{ id: string; step: StepResult }> {
  const step = (outcome: Outcome, detail: string, id = ''): { id: string; step: StepResult } => ({ id, step: { step: 'update-primary', target: addr, outcome, detail } });
  const token = perfTokenFor(input.perfTokens, addr);
  const probe = peer(ctx, flags, addr, PROBE_TIMEOUT_MS, token);
  let st;
  try {
    st = await probe.replication.kindStatus('performance');
  } catch (e) {
    return step(Outcome.failed, e instanceof ApiError ? `${oneLine(e)}${ownTokenHint(e, addr)}` : `unreachable: ${oneLine(e)}`);
  }
  const id = str(field(st, 'secondary_id'));
  if (st.mode !== 'secondary') return step(Outcome.failed, `not a performance secondary (performance mode: ${st.mode})`, id);
  const label = `perf secondary ${id || addr}`;
  if (str(field(st, 'primary_cluster_addr')) === clusterAddr && field(st, 'state') === 'stream-wals') {
    return step(Outcome.skipped, `${id}: already streaming from ${clusterAddr}`, id);
  }
  try {
    if (str(field(st, 'primary_cluster_addr')) !== clusterAddr) {
      display.note(`Moving ${label} (${addr}) to ${clusterAddr}...`);
      await peer(ctx, flags, addr, WRITE_TIMEOUT_MS, token).write('sys/replication/performance/secondary/update-primary', { update_primary_addrs: [clusterAddr] });
    }
    await waitForRole(probe, 'performance', { goal: Goal.streaming, primaryClusterAddrs: [clusterAddr] }, {
      timeoutMs: input.timeoutMs, intervalMs: ctx.io.pollIntervalMs ?? 500, display, label,
    });
  } catch (e) {
    return step(Outcome.failed, `${id}: ${oneLine(e)}${ownTokenHint(e, addr)}`, id);
  }
  return step(Outcome.done, `${id}: streaming from ${clusterAddr}`, id);
}

/** Its tokens are its own: a token of another secondary (or of the primary) is refused with 403. */
function ownTokenHint(e: unknown, addr: string): string {
  return e instanceof ApiError && e.status === 403 ? ` (a performance secondary has its own tokens: give it -perf-token=${addr}=<token>)` : '';
}
