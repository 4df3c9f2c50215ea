/**
 * Wires replication into a node: the local Merkle/WAL status and maintenance, the DR driver over
 * the gRPC transport, DR operation tokens, and the hooks that tie them to the seal lifecycle.
 *
 *   const repl = await wireReplication({ engine, seal, core, log, now, clusterListen, apiAddr });
 *   nodeRoutes(core, facts, repl.routes, sys);
 */
import type { Logger } from 'pino';
import { PermissionDenied } from '../core/errors.js';
import { OperationTokens } from '../replication/operation-token.js';
import { DrReplication } from '../replication/dr.js';
import { MODE_SUMMARY } from '../replication/dr-record.js';
import { drRoleStatus } from '../replication/dr-status.js';
import { LocalReplication } from '../replication/local.js';
import type { SealManager } from '../seal/index.js';
import type { StorageEngine } from '../storage/engine.js';
import { connectPrimary, serveReplication } from '../transport/grpc/index.js';
import type { VaultCore } from '../vault/core.js';
import type { ReplicationRoutes } from './routes.js';

const OP_TOKEN_PREFIX = 'node/replication/dr-operation-token/';

export interface WiredReplication {
  readonly routes: ReplicationRoutes;
  readonly dr: DrReplication;
  drMode(): string;
  clusterId(): string;
}

export async function wireReplication(o: {
  engine: StorageEngine;
  seal: SealManager;
  core: VaultCore;
  log: Logger;
  now: () => number;
  clusterListen: string;
  apiAddr: () => string;
}): Promise<WiredReplication> {
  const { engine, seal, core, log, now } = o;
  const dr = new DrReplication({
    engine,
    seal,
    core: {
      store: () => core.store(),
      reopen: () => core.reopen(),
      wrap: (data, ttl, path) => core.wrapping.wrap({ data }, ttl, path),
    },
    transport: {
      serve: (opts) => serveReplication({ ...opts, log }),
      connect: (opts) => connectPrimary(opts),
    },
    log: log.child({ replication: 'dr' }),
    clusterListen: o.clusterListen,
    apiAddr: o.apiAddr,
    now,
  });
  // While sealed, only this summary says what the cluster is (health, gating).
  let sealedMode = 'disabled';
  const summary = await engine.getSystem(MODE_SUMMARY);
  if (summary) sealedMode = (JSON.parse(summary.toString('utf8')) as { mode: string }).mode;
  let loaded = false;
  core.onOpened.push(async () => {
    await dr.load();
    loaded = true;
  });
  core.onSealing.push(async () => {
    sealedMode = dr.state.mode;
    loaded = false;
    await dr.suspend();
  });
  const drMode = () => {
    const mode = loaded ? dr.state.mode : sealedMode;
    return mode === 'bootstrapping' ? 'secondary' : mode;
  };
  core.drSecondaryCheck = () => drMode() === 'secondary';

  const local = new LocalReplication({
    engine,
    now,
    log,
    // Every status block says whether this node's storage has failed closed (see storage/fault-guard.ts).
    role: (kind) => {
      const failure = engine.failure();
      return {
        storage_failed: failure !== undefined,
        ...(failure !== undefined ? { storage_error: failure.message } : {}),
        ...(kind === 'dr' && loaded ? drRoleStatus(dr, engine.lastGuard().index, now()) : {}),
      };
    },
  });
  await local.load();

  const tokens = new OperationTokens({
    records: {
      get: (name) => core.store().get(OP_TOKEN_PREFIX + name),
      put: (name, value) => core.store().commit([value === undefined ? { type: 'del', key: OP_TOKEN_PREFIX + name } : { type: 'put', key: OP_TOKEN_PREFIX + name, value }]),
    },
    threshold: async () => (await seal.status()).t,
    verifyShares: (shares) => seal.verifyRootKeyShares(shares),
  });

  return {
    dr,
    drMode,
    clusterId: () => {
      const s = dr.state;
      return s.mode === 'disabled' ? '' : s.clusterId;
    },
    routes: {
      status: local,
      drTokens: tokens,
      resolveWrappingToken: (t) => dr.resolveActivationJwt(t),
      dr: {
        enablePrimary: (a) => dr.enablePrimary(a),
        demote: () => dr.demote(),
        disablePrimary: () => dr.disablePrimary(),
        secondaryToken: (r) => dr.secondaryToken(r),
        revokeSecondary: (id) => dr.revokeSecondary(id),
        generatePublicKey: () => dr.generatePublicKey(),
        enableSecondary: (r) => dr.enableSecondary(r),
        promote: (r) => dr.promote(r),
        disableSecondary: () => dr.disableSecondary(),
        updatePrimary: (r) => dr.updatePrimary(r),
        checkOperationToken: async (t) => {
          if (!(await tokens.validate(t))) throw new PermissionDenied('invalid DR operation token');
        },
        reindex: (opts) => local.reindex(opts),
        merkleCheck: () => local.merkleCheck(),
      },
    },
  };
}
