/**
 * `tessera operator members`: every node of the HA cluster from `sys/ha-status`, in the columns of
 * Vault's `vault operator members` (command/operator_members.go: Host Name, API Address, Cluster
 * Address, Active Node, Version, Upgrade Version, Redundancy Zone, Last Echo; Vault prints no
 * column for the echo duration or the clock skew, which `-format=json` shows).
 * `-format=json` prints `{ "nodes": [...] }` as Vault does. Needs a token; a standby relays it.
 */
import type { Command } from 'commander';
import type { HaNode } from '../../api/index.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { Format, columns, json } from '../output.js';

export const MEMBER_COLUMNS = ['Host Name', 'API Address', 'Cluster Address', 'Active Node', 'Version', 'Upgrade Version', 'Redundancy Zone', 'Last Echo'] as const;

/** One table row per node; the active node's Last Echo is empty, as are fields an older node does not send, as in Vault. */
export function memberRows(nodes: readonly HaNode[]): string[][] {
  return nodes.map((n) => [n.hostname, n.api_address, n.cluster_address, String(n.active_node), n.version, n.upgrade_version ?? '', n.redundancy_zone ?? '', n.last_echo ?? '']);
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent.command('members').description('List the nodes of the HA cluster and which one is active');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera operator members', 'tessera operator members -format=json');
  cmd.action(
    ctx.action(async (opts: ClientFlags & FormatFlags) => {
      try {
        const status = await ctx.client(opts).sys.haStatus();
        ctx.out(opts.format === Format.json ? json(status) : columns(MEMBER_COLUMNS, memberRows(status.nodes)));
        return 0;
      } catch (e) {
        return ctx.fail('listing the cluster members', e);
      }
    }),
  );
}
