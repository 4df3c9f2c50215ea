/**
 * Seal lifecycle and node health: sys/init, sys/unseal, sys/seal, sys/seal-status, sys/health,
 * sys/leader. These answer bare objects (no envelope), as Vault does.
 */
import { z } from 'zod';
import { VERSION } from '../../core/version.js';
import type { VaultCore } from '../../vault/core.js';
import { boolish, empty, intish, stringList } from '../fields.js';
import { bare, noContent } from '../reply.js';
import { op, type Route } from '../route.js';
import type { HaFacts } from '../../ha/index.js';
import { LEADER_SEALED, leaderBody } from './ha.js';

export interface NodeFacts {
  clusterName(): string;
  clusterId(): string;
  drMode(): string;
  performanceMode(): string;
  apiAddr(): string;
  clusterAddr(): string;
  /** The storage engine's fault message once it has failed closed (sticky until restart), else undefined. */
  storageFailure(): string | undefined;
  /** `leveldb` or `postgresql` (seal-status `storage_type`). */
  storageType(): string;
  /** The index of the last WAL entry (sys/leader `last_wal`). */
  lastWal(): number;
  /** The node's HA, when its storage has `ha_enabled`. */
  readonly ha: HaFacts | undefined;
}

const InitBody = z.object({
  secret_shares: intish,
  secret_threshold: intish,
  pgp_keys: stringList.nullish(),
  root_token_pgp_key: z.string().optional(),
});

const HealthQuery = z.object({
  standbyok: boolish.optional(),
  perfstandbyok: boolish.optional(),
  activecode: intish.optional(),
  standbycode: intish.optional(),
  drsecondarycode: intish.optional(),
  performancestandbycode: intish.optional(),
  sealedcode: intish.optional(),
  uninitcode: intish.optional(),
  haunhealthycode: intish.optional(),
}).passthrough();

export function sealRoutes(core: VaultCore, facts: NodeFacts): Route[] {
  const sealStatus = async () => {
    const s = await core.seal.status();
    return {
      ...s,
      version: VERSION,
      build_date: '',
      migration: false,
      recovery_seal: false,
      storage_type: facts.storageType(),
      ...(s.initialized && !s.sealed ? { cluster_name: facts.clusterName(), cluster_id: facts.clusterId() } : {}),
    };
  };
  return [
    {
      pattern: 'sys/init',
      access: 'public',
      whileSealed: true,
      operations: {
        read: op(empty, async () => bare(200, { initialized: await core.initialized() }), 'Return the initialization status of the node.'),
        update: op(InitBody, async ({ fields }) => {
          if (fields.pgp_keys && fields.pgp_keys.length > 0) {
            return bare(400, { errors: ['pgp_keys is not supported by this node; omit it to receive the shares in plaintext'] });
          }
          return bare(200, await core.initialize({ secret_shares: fields.secret_shares, secret_threshold: fields.secret_threshold }));
        }, 'Initialize a new node: generate the root key and its key shares.'),
      },
    },
    {
      pattern: 'sys/unseal',
      access: 'public',
      whileSealed: true,
      drSecondary: true,
      operations: {
        update: op(z.object({ key: z.string().optional(), reset: boolish.optional() }), async ({ fields }) => {
          await core.unseal(fields.key, fields.reset === true);
          return bare(200, await sealStatus());
        }, 'Provide one key share to unseal the node.'),
      },
    },
    {
      pattern: 'sys/seal-status',
      access: 'public',
      whileSealed: true,
      drSecondary: true,
      operations: { read: op(empty, async () => bare(200, await sealStatus()), 'Return the seal status of the node.') },
    },
    {
      pattern: 'sys/seal',
      access: 'sudo',
      scope: 'node',
      operations: {
        update: op(empty, async () => {
          await core.sealNow();
          return noContent();
        }, 'Seal the node.'),
      },
    },
    {
      pattern: 'sys/leader',
      access: 'public',
      whileSealed: true,
      drSecondary: true,
      operations: {
        read: op(empty, async () => (facts.ha !== undefined && core.sealed() ? bare(500, { errors: [LEADER_SEALED] }) : bare(200, leaderBody(facts.ha, facts.lastWal()))),
          'Return the high availability status and current leader.',
        ),
      },
    },
    {
      pattern: 'sys/health',
      access: 'public',
      whileSealed: true,
      drSecondary: true,
      operations: {
        read: op(HealthQuery, async ({ fields, req }) => {
          const initialized = await core.initialized();
          const sealed = core.sealed();
          const dr = facts.drMode() === 'secondary';
          const standby = !sealed && facts.ha?.standby() === true;
          const perfStandby = standby && facts.ha?.performanceStandby() === true;
          const echo = sealed ? undefined : facts.ha?.echo();
          const haProblem = sealed ? undefined : facts.ha?.problem();
          const storageFailure = facts.storageFailure() ?? (haProblem === undefined ? undefined : `the HA lock in storage cannot be reached: ${haProblem}`);
          let status = fields.activecode ?? 200;
          if (!initialized) status = fields.uninitcode ?? 501;
          else if (sealed) status = fields.sealedcode ?? 503;
          // A node that can no longer write is not healthy in any role; no query parameter hides it.
          else if (storageFailure !== undefined) status = 503;
          // Vault's order (http/sys_health.go): a standby whose echoes go unanswered, then DR, then the standbys.
          else if (echo?.heartbeat?.healthy === false) status = fields.haunhealthycode ?? 474;
          else if (dr) status = fields.drsecondarycode ?? 472;
          else if (perfStandby) status = fields.perfstandbyok === true ? (fields.activecode ?? 200) : (fields.performancestandbycode ?? 473);
          else if (standby) status = fields.standbyok === true ? (fields.activecode ?? 200) : (fields.standbycode ?? 429);
          const body = {
            initialized,
            sealed,
            standby,
            performance_standby: perfStandby,
            replication_performance_mode: facts.performanceMode(),
            replication_dr_mode: facts.drMode(),
            server_time_utc: Math.floor(Date.now() / 1000),
            version: VERSION,
            cluster_name: facts.clusterName(),
            cluster_id: facts.clusterId(),
            echo_duration_ms: echo?.echoDurationMs ?? 0,
            clock_skew_ms: echo?.clockSkewMs ?? 0,
            replication_primary_canary_age_ms: 0,
            ...(echo?.heartbeat !== undefined ? { ha_connection_healthy: echo.heartbeat.healthy, last_request_forwarding_heartbeat_ms: echo.heartbeat.sinceMs } : {}),
            storage_failed: storageFailure !== undefined,
            ...(storageFailure !== undefined ? { storage_error: storageFailure } : {}),
          };
          return req.method === 'HEAD' ? bare(status, undefined) : bare(status, body);
        }, 'Check the health status of the node.'),
      },
    },
  ];
}
