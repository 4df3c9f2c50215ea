/**
 * `tessera status`: prints the seal status, HA inside the cluster from `sys/leader` (Vault's rows:
 * HA Enabled, HA Cluster, HA Mode, Active Since, Active Node Address) and the DR and performance
 * replication facts of the node it talks to (mode, state, cluster id, last WAL, lag, connection).
 * Exit 0 unsealed, 2 sealed, 1 on error, as Vault's `vault status`. `-format=json` adds Vault's
 * `vault status -format=json` fields (ha_enabled, is_self, active_time, leader_address, ...) and
 * Tessera's `ha_mode`. The replication and leader endpoints are unauthenticated; a kind the node
 * cannot report (sealed, not implemented, 404) shows as "unknown", and a node that cannot answer
 * sys/leader shows no HA rows, rather than failing the command. A sealed node with HA answers
 * sys/leader 500 'Vault is sealed': read as HA enabled, as Vault's command/format.go does.
 */
import type { Command } from 'commander';
import type { KindStatus, LeaderResponse, SealStatus, TesseraClient } from '../../api/index.js';
import { ApiError, ReplicationKind } from '../../api/index.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { Format, json, renderValue, table } from '../output.js';
import { sealStatusRows } from './seal-status.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent.command('status').description('Print the seal, HA and replication status (exit 2 when sealed)');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera status', 'tessera status -format=json');
  cmd.action(
    ctx.action(async (opts: ClientFlags & FormatFlags) => {
      try {
        const client = ctx.client(opts);
        const status = await client.sys.sealStatus();
        const [leader, dr, performance] = await Promise.all([
          client.sys.leader().catch(sealedLeader),
          kindOrUnknown(client, ReplicationKind.dr),
          kindOrUnknown(client, ReplicationKind.performance),
        ]);
        if (opts.format === Format.json) ctx.out(json({ ...status, ...haFields(status, leader), replication: { dr, performance } }));
        else ctx.out(table([...sealStatusRows(status), ...haRows(status, leader), ...kindRows('DR', dr), ...kindRows('Performance', performance)], ['Key', 'Value']));
        return status.sealed ? 2 : 0;
      } catch (e) {
        return ctx.fail('checking seal status', e);
      }
    }),
  );
}

/** sys/leader's refusal on a sealed node with HA stands for HA enabled (Vault masks the error so); any other: no HA rows. */
function sealedLeader(e: unknown): LeaderResponse | undefined {
  if (!(e instanceof ApiError) || !e.errors.some((m) => m.includes('Vault is sealed'))) return undefined;
  return { ha_enabled: true, is_self: false, active_time: '0001-01-01T00:00:00Z', leader_address: '', leader_cluster_address: '', performance_standby: false, performance_standby_last_remote_wal: 0 };
}

/** The node's HA mode as `vault status` names it: sealed, active or standby (a cooldown is a standby). */
export function haMode(status: SealStatus, leader: LeaderResponse): 'sealed' | 'active' | 'standby' {
  if (status.sealed) return 'sealed';
  return leader.is_self ? 'active' : 'standby';
}

/** Vault's HA rows of `vault status` (command/format.go): only HA Enabled on a sealed node. */
export function haRows(status: SealStatus, leader: LeaderResponse | undefined): [string, string][] {
  if (leader === undefined) return [];
  const rows: [string, string][] = [['HA Enabled', String(leader.ha_enabled)]];
  if (!leader.ha_enabled || status.sealed) return rows;
  rows.push(['HA Cluster', leader.leader_cluster_address || 'n/a']);
  rows.push(['HA Mode', haMode(status, leader)]);
  if (leader.is_self && leader.active_time !== '' && !leader.active_time.startsWith('0001-01-01')) rows.push(['Active Since', leader.active_time]);
  if (!leader.is_self) rows.push(['Active Node Address', leader.leader_address || '<none>']);
  return rows;
}

/**
 * The fields `vault status -format=json` adds from sys/leader (Vault leaves out the empty ones,
 * `omitempty`, but always has ha_enabled and active_time), and Tessera's `ha_mode`.
 */
export function haFields(status: SealStatus, leader: LeaderResponse | undefined): Record<string, unknown> {
  if (leader === undefined) return {};
  const out: Record<string, unknown> = { ha_enabled: leader.ha_enabled };
  if (leader.ha_enabled) out['ha_mode'] = haMode(status, leader);
  const optional = ['is_self', 'active_time', 'leader_address', 'leader_cluster_address', 'performance_standby', 'performance_standby_last_remote_wal', 'last_wal'] as const;
  for (const key of optional) {
    const value = leader[key];
    if (key === 'active_time' || (value !== false && value !== '' && value !== 0 && value !== undefined)) out[key] = value;
  }
  return out;
}

async function kindOrUnknown(client: TesseraClient, kind: ReplicationKind): Promise<KindStatus> {
  try {
    return await client.replication.kindStatus(kind);
  } catch {
    return { mode: 'unknown' };
  }
}

/** The rows `vault status` would show for one replication kind; only the mode when inactive. */
export function kindRows(label: string, s: KindStatus): [string, string][] {
  const rows: [string, string][] = [[`${label} Replication Mode`, s.mode]];
  if (s.mode === 'disabled' || s.mode === 'unknown') return rows;
  const f = s as Record<string, unknown>;
  const add = (name: string, value: unknown): void => {
    if (value !== undefined && value !== '') rows.push([`${label} ${name}`, renderValue(value)]);
  };
  add('State', f['state']);
  add('Cluster ID', f['cluster_id']);
  if (s.mode === 'primary') {
    add('Last WAL', f['last_wal'] ?? f['last_dr_wal']);
    const peers = Array.isArray(f['secondaries']) ? (f['secondaries'] as { connection_status?: string }[]) : [];
    const connected = peers.filter((p) => p.connection_status === 'connected').length;
    add('Secondaries', `${connected} connected of ${peers.length}`);
  } else {
    add('Last Remote WAL', f['last_remote_wal']);
    add('Last WAL', f['last_wal']);
    add('Primary', f['primary_cluster_addr']);
    const primary = Array.isArray(f['primaries']) ? (f['primaries'][0] as { connection_status?: string; last_heartbeat?: string } | undefined) : undefined;
    add('Connection', [f['connection_state'], primary?.connection_status].filter((x) => typeof x === 'string' && x !== '').join(', '));
    add('Last Heartbeat', primary?.last_heartbeat);
  }
  if (f['lag_entries'] !== undefined) add('Lag', `${renderValue(f['lag_entries'])} entries (${renderValue(f['lag_ms'] ?? '0')} ms)`);
  add('Last Error', f['last_error']);
  return rows;
}
