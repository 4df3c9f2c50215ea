/**
 * What the HTTP routes show of this node's HA (sys/leader, sys/health, sys/ha-status,
 * sys/step-down), read from the controller, the verified leader and the standby's follow.
 *
 *   const facts = haFacts({ controller, leaders, follow, me, apiAddr, clusterAddr, now });
 *   facts.leader()     // sys/leader's body, the leader's api_addr only as verified
 */
import { clockSkewMs, heartbeatHealth, type EchoClocks } from '../core/ha/heartbeat.js';
import type { LeaseCandidate, LeaseMember } from '../core/ha/lease-store.js';
import type { HaController } from './controller.js';
import { ZERO_TIME, type HaFacts, type HaNodeInfo } from './ports.js';
import type { StandbyFollow } from './standby-follow.js';
import type { VerifiedLeader } from './verified-leader.js';

/** Members that have not echoed for this long drop out of sys/ha-status. */
export const MEMBER_MAX_AGE_MS = 15_000;

/** A member's last echo as the clock skew needs it. */
const clocksOf = (m: LeaseMember): EchoClocks => ({ localTime: m.localTime?.getTime(), databaseTime: m.lastEcho.getTime() });

export interface HaFactsOptions {
  readonly controller: HaController;
  readonly leaders: VerifiedLeader;
  readonly follow: StandbyFollow;
  readonly me: () => LeaseCandidate;
  readonly apiAddr: () => string;
  readonly clusterAddr: string;
  readonly now: () => number;
}

export function haFacts(o: HaFactsOptions): HaFacts {
  const { controller, leaders, follow } = o;
  return {
    leader: () => {
      const v = controller.view();
      if (controller.isActive()) {
        return { isSelf: true, activeTime: new Date(v.activeSince ?? o.now()).toISOString(), leaderAddress: o.apiAddr(), leaderClusterAddress: `https://${o.clusterAddr}` };
      }
      const row = v.leaderRow;
      // The row's api_addr is never shown: only what the node at its cluster address confirmed.
      const verified = row === undefined ? undefined : leaders.known(row.clusterAddr);
      return { isSelf: false, activeTime: ZERO_TIME, leaderAddress: verified ?? '', leaderClusterAddress: row === undefined ? '' : `https://${row.clusterAddr}` };
    },
    standby: () => controller.view().mode !== 'sealed' && !controller.isActive(),
    performanceStandby: () => follow.servesReads(),
    echo: () => {
      if (!follow.isStandby()) return { echoDurationMs: 0, clockSkewMs: 0 };
      const e = controller.echoes();
      const self = o.me().holder;
      const known = controller.knownMembers();
      const mine = known.find((m) => m.nodeId === self);
      const active = known.find((m) => m.nodeId === controller.view().leaderRow?.holder);
      const heartbeat = heartbeatHealth(e.answeredAt, o.now(), e.intervalMs);
      return {
        echoDurationMs: e.durationMs,
        clockSkewMs: mine === undefined || active === undefined ? 0 : clockSkewMs(clocksOf(mine), clocksOf(active)),
        ...(heartbeat !== undefined ? { heartbeat } : {}),
      };
    },
    problem: () => controller.storeProblem(),
    nodes: async () => {
      const members = await controller.members(MEMBER_MAX_AGE_MS);
      const view = controller.view();
      const self = o.me().holder;
      const active = controller.isActive() ? self : view.leaderRow?.holder;
      const activeRow = members.find((m) => m.nodeId === active);
      return members.map((m): HaNodeInfo => ({
        hostname: m.hostname,
        api_address: m.apiAddr,
        cluster_address: `https://${m.clusterAddr}`,
        active_node: m.nodeId === active,
        last_echo: m.nodeId === active ? null : m.lastEcho.toISOString(),
        // As Vault's: what the member measured and sent with its echo; nothing for the active node.
        echo_duration_ms: m.nodeId === active ? 0 : (m.echoDurationMs ?? 0),
        clock_skew_ms: m.nodeId === active || activeRow === undefined ? 0 : clockSkewMs(clocksOf(m), clocksOf(activeRow)),
        version: m.version,
        upgrade_version: m.version,
        redundancy_zone: m.redundancyZone ?? '',
        replication_primary_canary_age_ms: 0,
        // Not Vault's: why a node does not compete now, while it backs off (from its own echo).
        ...(m.activationFailure !== undefined && m.activationFailure.until > Date.now()
          ? { activation_failure: { reason: m.activationFailure.reason, at: new Date(m.activationFailure.at).toISOString(), competes_again_at: new Date(m.activationFailure.until).toISOString() } }
          : {}),
        ...(m.nodeId === self && view.excluded !== undefined ? { identity_taken_by: view.excluded } : {}),
      }));
    },
    stepDown: async () => {
      controller.stepDown();
    },
  };
}
