/**
 * HA inside a cluster (WIRE.md §9): sys/leader's facts, sys/ha-status and sys/step-down. A node
 * without HA answers sys/leader with `ha_enabled: false` and the rest empty, sys/ha-status with
 * itself alone, and sys/step-down with 204 doing nothing, as Vault does on a storage without HA.
 * A sealed (or uninitialised) node with HA answers sys/leader 500 'Vault is sealed', as Vault's
 * http/sys_leader.go does with the error of vault/ha.go's Leader.
 */
import { empty } from '../fields.js';
import { bare, envelope, noContent } from '../reply.js';
import { op, type Route } from '../route.js';

/** One node of the cluster as sys/ha-status shows it (Vault's field names). */
export interface HaNodeInfo {
  readonly hostname: string;
  readonly api_address: string;
  readonly cluster_address: string;
  readonly active_node: boolean;
  /** RFC 3339; null for the active node. */
  readonly last_echo: string | null;
  /** How long the member's echo before its last took (ms), as it measured it; 0 for the active node. */
  readonly echo_duration_ms: number;
  /** The active node's clock minus the member's at its last echo (ms), as Vault's; 0 for the active node. */
  readonly clock_skew_ms: number;
  readonly version: string;
  /** Vault's upgrade version (raft's autopilot, which defaults it to the node's version): the node's version. */
  readonly upgrade_version: string;
  /** '' unless the node has one configured. */
  readonly redundancy_zone: string;
  /** Vault's replication canary age (ms): 0, there is no canary. */
  readonly replication_primary_canary_age_ms: number;
  /** This node only, not Vault's: why it last failed to serve as active, while it backs off. */
  readonly activation_failure?: { readonly reason: string; readonly at: string; readonly competes_again_at: string };
  /** This node only, not Vault's: the other live process that holds this node's identity. */
  readonly identity_taken_by?: string;
}

/** What the HTTP layer needs of the node's HA (src/ha implements it). */
export interface HaFacts {
  /** sys/leader's body without the node-only fields. */
  leader(): { isSelf: boolean; activeTime: string; leaderAddress: string; leaderClusterAddress: string };
  /** Whether this node is an unsealed standby (health 429). */
  standby(): boolean;
  /** Whether this node is a performance standby, one that serves reads itself (health 473, sys/leader `performance_standby`). */
  performanceStandby(): boolean;
  /** This node's own echoes, for sys/health (zeros and no heartbeat on the active node). */
  echo(): HaEchoFacts;
  /** Why the HA lock cannot be reached now (the database is down), for sys/health; undefined when it can. */
  problem(): string | undefined;
  nodes(): Promise<HaNodeInfo[]>;
  /** Stops being active, releases the lock, sits out the cooldown; resolves once stopped. */
  stepDown(): Promise<void>;
}

/** What sys/health shows of this node's echoes (Vault's fields of a standby's heartbeat to the active node). */
export interface HaEchoFacts {
  readonly echoDurationMs: number;
  /** The active node's clock minus this node's (ms). */
  readonly clockSkewMs: number;
  /** Standbys only, once an echo was answered: whether the last answer is recent (else health 474) and its age. */
  readonly heartbeat?: { readonly healthy: boolean; readonly sinceMs: number };
}

/** Vault's error for sys/leader on a sealed node with HA (consts.ErrSealed). */
export const LEADER_SEALED = 'Vault is sealed';

/** Vault's zero time: what `active_time` says when no node is active or HA is off. */
export const ZERO_TIME = '0001-01-01T00:00:00Z';

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
