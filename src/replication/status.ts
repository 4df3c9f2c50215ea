/**
 * The role-specific part of `sys/replication/:kind/status` (WIRE.md section 3), with our additions:
 * lag in WAL entries and milliseconds on both ends. Cluster addresses answer in Vault's form,
 * `https://host:port` (WIRE.md section 8). Types are strict: indices are JSON numbers,
 * times are RFC 3339 strings, `*_ms` fields are strings. The primary's last index is
 * `last_dr_wal` or `last_performance_wal` (KIND_POLICY.lastWalField); a secondary's position is
 * its upstream guard (for a performance secondary, not its own WAL's index).
 */
import { vaultClusterAddr } from '../core/cluster-addr.js';
import { KIND_POLICY, statusFields } from '../core/replication/index.js';
import type { Store } from '../storage/store.js';
import type { ReplicationDriver } from './driver.js';
import { loadRecord } from './role-record.js';
import { lastApplied } from './secondary-views.js';
import type { VerificationStatus } from './verification.js';

const CONNECTED_WITHIN_MS = 3000;

/** While a demote drains: the final index and who has not applied it yet. */
function drainFields(dr: ReplicationDriver): Record<string, unknown> {
  const d = dr.drainProgress;
  if (!d) return {};
  return { demote_drain: { last_wal: Number(d.lastWal), pending: d.pending.map((x) => ({ id: x.id, last_applied_wal: Number(x.applied) })) } };
}

/**
 * Continuous verification (verification.ts): the last WAL index at which this secondary's Merkle
 * root matched its primary's, when, whether the latest comparison found them different, and the
 * repairs (Merkle diff and sync) a mismatch started.
 */
function verificationFields(v: VerificationStatus | undefined): Record<string, unknown> {
  return {
    last_verified_wal: Number(v?.lastVerifiedWal ?? 0n),
    last_verified_at: rfc3339(v?.lastVerifiedAtMs ?? 0),
    verification_mismatch: v?.mismatch ?? false,
    ...(v?.mismatch ? { verification_mismatch_wal: Number(v.mismatchWal) } : {}),
    // A mismatch is repaired by a Merkle diff and sync (verification.ts): how many ran, the last when.
    verification_repairs: v?.repairs ?? 0,
    last_verification_repair: rfc3339(v?.lastRepairAtMs ?? 0),
  };
}

function rfc3339(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString() : '';
}

/** The primary's WAL retention, for WAL headroom (how long until a stopped secondary needs a Merkle sync). */
export interface WalRetention {
  readonly firstRetained: bigint;
  readonly retainedBytes: number;
  readonly maxEntries: number;
  readonly maxBytes: number;
}

export function roleStatus(dr: ReplicationDriver, lastWal: bigint, now: number, wal?: WalRetention): Record<string, unknown> {
  const s = dr.state;
  const base: Record<string, unknown> = { ...statusFields(s) };
  switch (s.mode) {
    case 'disabled':
      return { mode: 'disabled', state: 'idle', ...(dr.material.lastError ? { last_error: dr.material.lastError } : {}) };
    case 'primary': {
      const views = dr.primaryStreamer?.views;
      const secondaries = (views?.all() ?? []).sort((a, b) => a.id.localeCompare(b.id)).map((v) => {
        // Before a restart's first report from it, the record's applied index (secondary-views.ts).
        const applied = lastApplied(v);
        const lagEntries = lastWal > applied ? Number(lastWal - applied) : 0;
        // The open stream is the truth (secondary-views.ts): connected while it is open and heartbeats arrive.
        const connected = views?.connected(v, now) ?? false;
        return {
          node_id: v.id,
          // Vault's fields hold what this primary observed: the peer address of the secondary's
          // latest call (Vault's form); it cannot observe an API address. What the secondary says
          // of itself is marked as reported.
          api_address: '',
          cluster_address: vaultClusterAddr(v.peerAddr),
          reported_api_address: v.apiAddr,
          reported_cluster_address: vaultClusterAddr(v.clusterAddr),
          connection_status: connected ? 'connected' : 'disconnected',
          last_heartbeat: rfc3339(v.lastHeartbeatMs),
          last_heartbeat_duration_ms: String(v.heartbeatDurationMs),
          clock_skew_ms: String(v.clockSkewMs),
          replication_primary_canary_age_ms: String(v.lastHeartbeatMs > 0 ? Math.max(0, now - v.lastHeartbeatMs) : 0),
          state: views?.displayState(v, now) ?? 'idle',
          last_applied_wal: Number(applied),
          lag_entries: lagEntries,
          // From the commit of the oldest entry it lacks, to now: it grows while the secondary is gone.
          lag_ms: String(lagEntries > 0 && v.missingSinceMs > 0 ? Math.max(0, now - v.missingSinceMs) : 0),
        };
      });
      return {
        ...base,
        mode: 'primary',
        state: 'running',
        cluster_id: s.clusterId,
        primary_cluster_addr: vaultClusterAddr(dr.clusterAddr()),
        known_secondaries: Object.keys(s.secondaries).filter((id) => s.secondaries[id]?.status !== 'revoked').sort(),
        [KIND_POLICY[dr.kind].lastWalField]: Number(lastWal),
        secondaries,
        lag_entries: secondaries.reduce((m, x) => Math.max(m, x.lag_entries), 0),
        lag_ms: String(secondaries.reduce((m, x) => Math.max(m, Number(x.lag_ms)), 0)),
        // A secondary that needs an entry below wal_first_retained can only Merkle-sync.
        ...(wal ? { wal_first_retained: Number(wal.firstRetained), wal_retained_bytes: wal.retainedBytes, wal_max_entries: wal.maxEntries, wal_max_bytes: wal.maxBytes } : {}),
        ...drainFields(dr),
      };
    }
    case 'secondary':
    case 'bootstrapping': {
      const loop = dr.secondaryLoop;
      const p = loop?.progress;
      // The secondary's position in its primary's history (its own WAL may differ: performance).
      const applied = dr.appliedUpstream() ?? lastWal;
      const lagEntries = p && p.primaryLastWal > applied ? Number(p.primaryLastWal - applied) : 0;
      // Behind: how old the newest entry we hold is, against the primary's last commit when known
      // (else against now, an upper bound while the primary is silent).
      const lagMs = p && lagEntries > 0 && p.lastAppliedCommitMs > 0 ? Math.max(0, (p.primaryCommitTimeMs || now) - p.lastAppliedCommitMs) : 0;
      // The node of the primary cluster it is (or was last) connected to: HA moves it between the
      // cluster's nodes (known_primary_cluster_addrs), as Vault's status follows the active node.
      const primaryAddr = loop?.primaryAddr || (s.primary?.clusterAddr ?? '');
      const state = s.mode === 'bootstrapping' ? 'bootstrapping' : (p?.state ?? 'idle');
      return {
        ...base,
        mode: s.mode === 'bootstrapping' ? 'bootstrapping' : 'secondary',
        state,
        cluster_id: s.clusterId,
        secondary_id: s.secondaryId ?? '',
        last_remote_wal: Number(p?.lastRemoteWal ?? applied),
        primary_cluster_addr: vaultClusterAddr(primaryAddr),
        known_primary_cluster_addrs: (dr.material.secondary?.knownPrimaryClusterAddrs ?? []).map(vaultClusterAddr),
        connection_state: p?.connection ?? 'shutdown',
        last_start: rfc3339(p?.lastStartMs ?? 0),
        primaries: s.primary
          ? [{
              api_address: s.primary.apiAddr,
              cluster_address: vaultClusterAddr(primaryAddr),
              connection_status: p && now - p.lastHeartbeatMs < CONNECTED_WITHIN_MS ? 'connected' : 'disconnected',
              last_heartbeat: rfc3339(p?.lastHeartbeatMs ?? 0),
              last_heartbeat_duration_ms: String(p?.heartbeatDurationMs ?? 0),
              clock_skew_ms: String(p?.clockSkewMs ?? 0),
            }]
          : [],
        // The primary's last index as it last told us (heartbeat, batch, or a demote's final index).
        primary_last_wal: Number(p?.primaryLastWal ?? 0n),
        lag_entries: lagEntries,
        lag_ms: String(lagMs),
        ...(state === 'merkle-sync' || state === 'merkle-diff' ? { merkle_sync_progress: { sync_total_keys: p?.syncTotal ?? 0, sync_progress: p?.syncDone ?? 0 } } : {}),
        ...(p?.lastSync ? { last_merkle_sync: { fetched_keys: p.lastSync.fetched, deleted_keys: p.lastSync.deleted } } : {}),
        // Beside last_merkle_sync, not in it: that object's shape is documented (failover runbook).
        ...(p?.lastSync ? { last_merkle_sync_bytes: p.lastSyncBytes } : {}),
        // Kept after the connection recovers; its time tells a past error from a current one.
        ...(p?.lastError ? { last_error: p.lastError, last_error_time: rfc3339(p.lastErrorMs) } : {}),
        ...verificationFields(loop?.verification),
      };
    }
  }
}

/**
 * On a DR secondary, the performance role it holds for its primary (local class, replicated to
 * it; it runs only once the node is promoted): `held_role` in the performance status, so a
 * failover plan can name the performance secondaries that will have to follow while the primary
 * is unreachable. Ids only: their addresses are known only to the primary's open streams.
 */
export async function heldRoleStatus(store: Store, kind: 'performance'): Promise<Record<string, unknown>> {
  const s = (await loadRecord(store, kind)).state;
  if (s.mode !== 'primary') return { held_role: { mode: s.mode } };
  const known = Object.keys(s.secondaries).filter((id) => s.secondaries[id]?.status !== 'revoked').sort();
  return { held_role: { mode: 'primary', cluster_id: s.clusterId, known_secondaries: known } };
}
