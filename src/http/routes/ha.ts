/**
 * HA inside a cluster (WIRE.md §9): sys/leader's facts, sys/ha-status and sys/step-down. A node
 * without HA answers sys/leader with `ha_enabled: false` and the rest empty, sys/ha-status with
 * itself alone, and sys/step-down with 204 doing nothing, as Vault does on a storage without HA.
 * A sealed (or uninitialised) node with HA answers sys/leader 500 'Vault is sealed', as Vault's
 * http/sys_leader.go does with the error of vault/ha.go's Leader.
 */
import { ZERO_TIME, type HaFacts, type HaNodeInfo } from '../../ha/index.js';
import { empty } from '../fields.js';
import { bare, envelope, noContent } from '../reply.js';
import { op, type Route } from '../route.js';

/** Vault's error for sys/leader on a sealed node with HA (consts.ErrSealed). */
export const LEADER_SEALED = 'Vault is sealed';

/**
 * sys/leader's body (it answers without a token; with HA only unsealed). As Vault's
 * http/sys_leader.go: `last_wal` on the active node or without HA, 0 on a standby; a performance
 * standby shows the last WAL index it has read as `performance_standby_last_remote_wal` instead.
 */
export function leaderBody(ha: HaFacts | undefined, lastWal: number): Record<string, unknown> {
  if (ha === undefined) {
    return { ha_enabled: false, is_self: false, active_time: ZERO_TIME, leader_address: '', leader_cluster_address: '', performance_standby: false, performance_standby_last_remote_wal: 0, last_wal: lastWal };
  }
  const l = ha.leader();
  const perfStandby = !l.isSelf && ha.performanceStandby();
  return {
    ha_enabled: true,
    is_self: l.isSelf,
    active_time: l.activeTime,
    leader_address: l.leaderAddress,
    leader_cluster_address: l.leaderClusterAddress,
    performance_standby: perfStandby,
    performance_standby_last_remote_wal: perfStandby ? lastWal : 0,
    last_wal: l.isSelf ? lastWal : 0,
  };
}

export function haRoutes(ha: HaFacts | undefined, self: () => HaNodeInfo): Route[] {
  return [
    {
      pattern: 'sys/ha-status',
      access: 'token',
      scope: 'node',
      operations: {
        read: op(empty, async ({ req }) => {
          const nodes = ha === undefined ? [self()] : await ha.nodes();
          // Vault's Go client decodes the raw body into {Nodes}: the list is at the top level too.
          return bare(200, { ...envelope(req.id, { kind: 'envelope', data: { nodes } }), nodes });
        }, 'Check the HA status of the cluster: every node, and which one is active.'),
      },
    },
    {
      pattern: 'sys/step-down',
      access: 'sudo',
      scope: 'node',
      operations: {
        update: op(empty, async () => {
          if (ha !== undefined) await ha.stepDown();
          return noContent();
        }, 'Cause the node to give up its active status.'),
      },
    },
  ];
}
