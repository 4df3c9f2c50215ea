/**
 * `tessera operator dr failover -plan`: what a failover to this DR secondary would do and cost,
 * read from status endpoints only (nothing changes anywhere). The promote verdict comes from the
 * node's own rule (core `promoteRefusal`), applied to what the secondary's status says.
 *
 *   const plan = await makePlan(ctx, flags, { primaryAddress: undefined, perfSecondaries: [] });
 *   ctx.out(renderPlan(plan));
 */
import { promoteRefusal } from '../../core/replication/index.js';
import type { KindStatus, TesseraClient } from '../../api/index.js';
import type { ClientFlags, Context } from '../context.js';
import { table } from '../output.js';
import { field, num, peer, probeHealth, statusOrUndefined, str, type HealthProbe } from './peers.js';

export const PROBE_TIMEOUT_MS = 3000;

export interface PlanInput {
  /** Overrides the primary address the secondary reports (primaries[0].api_address). */
  readonly primaryAddress?: string | undefined;
  /** API addresses of performance secondaries given on the command line. */
  readonly perfSecondaries: readonly string[];
}

export interface PerfSecondary {
  readonly id: string;
  readonly api_address: string;
  readonly connection_status?: string;
}

export interface FailoverPlan {
  readonly secondary: {
    readonly address: string;
    readonly mode: string;
    readonly state: string;
    readonly cluster_id: string;
    readonly secondary_id: string;
    readonly connection_state: string;
    readonly last_remote_wal: number;
    readonly primary_last_wal: number;
    readonly lag_entries: number;
    readonly lag_ms: number;
    readonly last_heartbeat: string;
    /** ms since the last heartbeat, -1 when never heard. */
    readonly last_heartbeat_age_ms: number;
    readonly last_error?: string;
  };
  readonly primary: HealthProbe & { readonly api_address: string; readonly cluster_address: string; readonly mode?: string; readonly last_dr_wal?: number };
  readonly promote: { readonly already_primary: boolean; readonly passes_without_force: boolean; readonly refusal?: string };
  readonly rpo: {
    /** Entries the primary told this secondary of that it has not applied. */
    readonly known_entries: number;
    /** When the primary answers: its last DR WAL index minus what this secondary applied. */
    readonly primary_entries?: number;
    readonly note: string;
  };
  /** `source`: where the list came from, 'primary', 'dr secondary' (its held role: ids), 'command line', joined by ' and '; or 'none'. */
  readonly performance_secondaries: { readonly source: string; readonly note?: string; readonly secondaries: readonly PerfSecondary[] };
  readonly warnings: readonly string[];
  readonly commands: readonly string[];
}

export async function makePlan(ctx: Context, flags: ClientFlags & { readonly address?: string }, input: PlanInput): Promise<FailoverPlan> {
  const client = ctx.client(flags).withWrapTtl(undefined);
  const st = await client.replication.kindStatus('dr');
  const primaries = (field(st, 'primaries') as { api_address?: string; cluster_address?: string; last_heartbeat?: string }[] | undefined) ?? [];
  const p0 = primaries[0] ?? {};
  const lastHeartbeat = str(p0.last_heartbeat);
  const heardAt = lastHeartbeat === '' ? NaN : Date.parse(lastHeartbeat);
  const secondary: FailoverPlan['secondary'] = {
    address: client.addr,
    mode: st.mode,
    state: str(field(st, 'state')),
    cluster_id: str(field(st, 'cluster_id')),
    secondary_id: str(field(st, 'secondary_id')),
    connection_state: str(field(st, 'connection_state')),
    last_remote_wal: num(field(st, 'last_remote_wal')),
    primary_last_wal: num(field(st, 'primary_last_wal')),
    lag_entries: num(field(st, 'lag_entries')),
    lag_ms: num(field(st, 'lag_ms')),
    last_heartbeat: lastHeartbeat,
    last_heartbeat_age_ms: Number.isNaN(heardAt) ? -1 : Math.max(0, Date.now() - heardAt),
    ...(str(field(st, 'last_error')) !== '' ? { last_error: str(field(st, 'last_error')) } : {}),
  };

  const primaryAddress = input.primaryAddress ?? str(p0.api_address);
  let primary: FailoverPlan['primary'] = { api_address: primaryAddress, cluster_address: str(p0.cluster_address), reachable: false, error: 'no primary address known (pass -primary-address)' };
  let primaryDr: KindStatus | undefined;
  let primaryPerf: KindStatus | undefined;
  if (primaryAddress !== '') {
    const pc = peer(ctx, flags, primaryAddress, PROBE_TIMEOUT_MS);
    const probe = await probeHealth(pc);
    primaryDr = probe.reachable ? await statusOrUndefined(pc, 'dr') : undefined;
    primaryPerf = probe.reachable ? await statusOrUndefined(pc, 'performance') : undefined;
    primary = {
      ...probe,
      api_address: primaryAddress,
      cluster_address: str(p0.cluster_address),
      ...(primaryDr !== undefined ? { mode: primaryDr.mode } : {}),
      ...(primaryDr?.mode === 'primary' ? { last_dr_wal: num(field(primaryDr, 'last_dr_wal') ?? field(primaryDr, 'last_wal')) } : {}),
    };
  }

  const alreadyPrimary = st.mode === 'primary';
  // The driver's `behind`: the primary's last index against what this secondary applied.
  const applied = secondary.primary_last_wal - secondary.lag_entries;
  const refusal = st.mode === 'secondary' ? promoteRefusal(secondary.state, { applied, primaryLast: secondary.primary_last_wal }) : alreadyPrimary ? null : `this node is not a DR secondary (dr mode: ${st.mode})`;
  const promote = { already_primary: alreadyPrimary, passes_without_force: !alreadyPrimary && refusal === null, ...(refusal !== null ? { refusal } : {}) };

  const rpo = {
    known_entries: secondary.lag_entries,
    ...(primary.last_dr_wal !== undefined ? { primary_entries: Math.max(0, primary.last_dr_wal - applied) } : {}),
    note:
      primary.last_dr_wal !== undefined
        ? 'the primary answered: primary_entries is what it holds that this secondary has not applied'
        : `as far as this secondary knows: writes the primary took after the last heartbeat (${lastHeartbeat || 'never'}) are not counted`,
  };

  const performance_secondaries = await perfSecondaries(ctx, flags, client, primaryPerf, input.perfSecondaries);

  const warnings: string[] = [];
  if (primary.reachable && primary.mode === 'primary' && primary.health_status === 200) {
    warnings.push('the primary is up and active: promoting now makes two primaries. For a planned switchover demote it first (see the first command), then fail over');
  }
  if (!alreadyPrimary && refusal !== null && st.mode === 'secondary') {
    warnings.push(`promote would be refused without force: ${refusal}. Wait for it to catch up, or fail over with -force and lose those entries`);
  }

  return { secondary, primary, promote, rpo, performance_secondaries, warnings, commands: commandsFor(secondary.address, primary, promote, performance_secondaries.secondaries) };
}

function commandsFor(s: string, p: FailoverPlan['primary'], promote: FailoverPlan['promote'], perf: readonly PerfSecondary[]): string[] {
  const out: string[] = [];
  if (p.reachable && p.mode === 'primary') out.push(`tessera write -address=${p.api_address} sys/replication/dr/primary/demote`);
  const perfFlags = perf.filter((x) => x.api_address !== '').map((x) => ` -perf-secondary=${x.api_address}`).join('');
  const force = promote.already_primary || promote.passes_without_force ? '' : ' -force';
  out.push(`tessera operator dr failover -address=${s}${perfFlags}${force}`);
  out.push(`tessera operator dr failback -address=${s} -old-primary=${p.api_address || '<old primary address>'}`);
  return out;
}

export function renderPlan(plan: FailoverPlan): string {
  const s = plan.secondary;
  const p = plan.primary;
  const heard = s.last_heartbeat_age_ms < 0 ? 'never' : `${s.last_heartbeat} (${Math.round(s.last_heartbeat_age_ms / 1000)} s ago)`;
  const rows: [string, string][] = [
    ['Primary', `${p.api_address || 'unknown'} (cluster ${p.cluster_address || 'unknown'})`],
    ['Primary Reachable', p.reachable ? `yes (sys/health ${p.health_status}${p.mode ? `, dr mode ${p.mode}` : ''})` : `no (${p.error ?? 'no answer'})`],
    ['Secondary', `${s.address} (id ${s.secondary_id || 'n/a'})`],
    ['Secondary Mode', s.mode],
    ['Secondary State', `${s.state || 'n/a'} (connection ${s.connection_state || 'n/a'})`],
    ['Applied / Primary Last WAL', `${s.last_remote_wal} / ${s.primary_last_wal}`],
    ['Lag', `${s.lag_entries} entries (${s.lag_ms} ms)`],
    ['Last Heartbeat', heard],
    ['Promote Without Force', plan.promote.already_primary ? 'n/a: already primary' : plan.promote.passes_without_force ? 'passes' : `refused: ${plan.promote.refusal}`],
    ['RPO (known)', `${plan.rpo.known_entries} entries`],
    ...(plan.rpo.primary_entries !== undefined ? [['RPO (primary answered)', `${plan.rpo.primary_entries} entries`] as [string, string]] : []),
    ['RPO Note', plan.rpo.note],
    ['Performance Secondaries', `${plan.performance_secondaries.secondaries.length} (source: ${plan.performance_secondaries.source})`],
    ...plan.performance_secondaries.secondaries.map((x) => [`  ${x.id || '-'}`, `${x.api_address || 'address unknown'}${x.connection_status ? ` (${x.connection_status})` : ''}`] as [string, string]),
  ];
  if (s.last_error) rows.push(['Last Error', s.last_error]);
  let text = `Failover plan (nothing was changed)\n\n${table(rows)}`;
  if (plan.performance_secondaries.note) text += `\nNote: ${plan.performance_secondaries.note}\n`;
  for (const w of plan.warnings) text += `\nWARNING: ${w}\n`;
  text += `\nCommands:\n${plan.commands.map((c) => `  ${c}`).join('\n')}\n`;
  return text;
}

/**
 * Who must follow: the primary's performance secondaries when it answers (ids and addresses);
 * else the ids the DR secondary holds in its replicated performance role (`held_role`); plus the
 * addresses given with -perf-secondary, matched to ids by asking each one its status.
 */
async function perfSecondaries(
  ctx: Context, flags: ClientFlags, client: TesseraClient, primaryPerf: KindStatus | undefined, given: readonly string[],
): Promise<FailoverPlan['performance_secondaries']> {
  const sources: string[] = [];
  const list: PerfSecondary[] = [];
  if (primaryPerf?.mode === 'primary') {
    sources.push('primary');
    for (const s of (field(primaryPerf, 'secondaries') as { node_id: string; api_address: string; reported_api_address?: string; connection_status: string }[] | undefined) ?? []) {
      // The primary cannot observe an API address: the one the secondary reports is where to reach it.
      list.push({ id: s.node_id, api_address: s.reported_api_address || s.api_address, connection_status: s.connection_status });
    }
  } else {
    const held = field(await statusOrUndefined(client, 'performance'), 'held_role') as { mode?: string; known_secondaries?: string[] } | undefined;
    if (held?.mode === 'primary') {
      sources.push('dr secondary');
      for (const id of held.known_secondaries ?? []) list.push({ id, api_address: '' });
    }
  }
  const fromFlags = given.filter((a) => !list.some((s) => s.api_address === a));
  if (fromFlags.length > 0) sources.push('command line');
  for (const addr of fromFlags) {
    const id = str(field(await statusOrUndefined(peer(ctx, flags, addr, PROBE_TIMEOUT_MS), 'performance'), 'secondary_id'));
    const known = id === '' ? -1 : list.findIndex((s) => s.id === id && s.api_address === '');
    if (known >= 0) list[known] = { id, api_address: addr };
    else list.push({ id, api_address: addr });
  }
  const unaddressed = list.filter((s) => s.api_address === '').map((s) => s.id);
  const note =
    unaddressed.length > 0
      ? `no address known for ${unaddressed.join(', ')} (the primary does not answer; a DR secondary holds only their ids): give each with -perf-secondary=ADDR`
      : primaryPerf === undefined && sources.length === 0
        ? 'the primary does not answer and this DR secondary holds no performance role: give any performance secondary with -perf-secondary=ADDR'
        : undefined;
  return { source: sources.length > 0 ? sources.join(' and ') : 'none', ...(note !== undefined ? { note } : {}), secondaries: list };
}
