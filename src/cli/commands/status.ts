/**
 * `tessera status`: prints the seal status and, like `vault status` shows HA and replication
 * fields, the DR and performance replication facts of the node it talks to (mode, state, cluster
 * id, last WAL, lag, connection). Exit 0 unsealed, 2 sealed, 1 on error, as Vault's `vault status`.
 * The replication endpoints are unauthenticated; a kind the node cannot report (sealed, not
 * implemented, 404) shows as "unknown" rather than failing the command.
 */
import type { Command } from 'commander';
import type { KindStatus, TesseraClient } from '../../api/index.js';
import { ReplicationKind } from '../../api/index.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { Format, json, renderValue, table } from '../output.js';
import { sealStatusRows } from './seal-status.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent.command('status').description('Print the seal and replication status (exit 2 when sealed)');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera status', 'tessera status -format=json');
  cmd.action(
    ctx.action(async (opts: ClientFlags & FormatFlags) => {
      try {
        const client = ctx.client(opts);
        const status = await client.sys.sealStatus();
        const [dr, performance] = await Promise.all([kindOrUnknown(client, ReplicationKind.dr), kindOrUnknown(client, ReplicationKind.performance)]);
        if (opts.format === Format.json) ctx.out(json({ ...status, replication: { dr, performance } }));
        else ctx.out(table([...sealStatusRows(status), ...kindRows('DR', dr), ...kindRows('Performance', performance)], ['Key', 'Value']));
        return status.sealed ? 2 : 0;
      } catch (e) {
        return ctx.fail('checking seal status', e);
      }
    }),
  );
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
