/**
 * Wires replication into a node: the local Merkle/WAL status and maintenance, the DR driver over
 * the gRPC transport, DR operation tokens, and the hooks that tie them to the seal lifecycle.
 *
 *   const repl = await wireReplication({ engine, seal, core, log, now, clusterListen, apiAddr });
 *   nodeRoutes(core, facts, repl.routes, sys);
 */
import type { Logger } from 'pino';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import { OperationTokens } from '../replication/operation-token.js';
import { DrReplication } from '../replication/dr.js';
import { MODE_SUMMARY } from '../replication/dr-record.js';
import { drRoleStatus } from '../replication/dr-status.js';
import { LocalReplication } from '../replication/local.js';
import type { SealManager } from '../seal/index.js';
import type { StorageEngine } from '../storage/engine.js';
import { connectPrimary, serveReplication } from '../transport/grpc/index.js';
import type { VaultCore } from '../vault/core.js';
import type { DrService } from '../http/routes/replication-dr.js';
import type { DrOperationTokenService } from '../http/routes/dr-operation-token.js';
import { audited } from './replication-audit.js';
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
      revokeAccessor: async (accessor) => {
        await core.tokens.revokeAccessor(accessor);
      },
      restoreRoot: async (token) => {
        await core.tokens.createRoot({ id: token });
      },
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

  /** DR-secondary-only operations refuse elsewhere, naming the mode, before any token is checked. */
  const requireSecondary = (): void => {
    const mode = drMode();
    if (mode !== 'secondary') throw new InvalidRequest(`this node is not a DR secondary (dr mode: ${mode})`);
  };
  const secondaryOnly = <A extends unknown[], R>(fn: (...a: A) => Promise<R>) => async (...a: A): Promise<R> => {
    requireSecondary();
    return fn(...a);
  };
  const audit = log.child({ component: 'replication' });

  const drService: DrService = {
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
    checkOperationToken: secondaryOnly(async (t: string) => {
      if (!(await tokens.validate(t))) throw new PermissionDenied('invalid DR operation token');
    }),
    reindex: secondaryOnly((opts: { diff: boolean; force: boolean; skipFlush: boolean }) => local.reindex(opts)),
    merkleCheck: secondaryOnly(() => local.merkleCheck()),
  };
  const tokenService: DrOperationTokenService = {
    start: secondaryOnly((r: Parameters<OperationTokens['start']>[0]) => tokens.start(r)),
    status: secondaryOnly(() => tokens.status()),
    cancel: secondaryOnly(() => tokens.cancel()),
    update: secondaryOnly((r: Parameters<OperationTokens['update']>[0]) => tokens.update(r)),
    revoke: secondaryOnly((t: string) => tokens.revoke(t)),
  };
  const reindexFlags = ([o]: [{ diff: boolean; force: boolean; skipFlush: boolean }]) => ({ diff: o.diff, force: o.force });

  return {
    dr,
    drMode,
    clusterId: () => {
      const s = dr.state;
      return s.mode === 'disabled' ? '' : s.clusterId;
    },
    // The one place replication operations are logged for operators (never a token).
    routes: {
      status: audited(audit, local, {
        reindex: { op: 'reindex', detail: reindexFlags },
        merkleCheck: { op: 'merkle-check' },
      }),
      drTokens: audited(audit, tokenService, {
        start: { op: 'dr/generate-operation-token/attempt' },
        cancel: { op: 'dr/generate-operation-token/cancel' },
        update: { op: 'dr/generate-operation-token/update', detail: (_a, r) => (r ? { progress: r.progress, required: r.required, token_created: r.complete } : {}) },
        revoke: { op: 'dr/operation-token/delete' },
      }),
      resolveWrappingToken: (t) => dr.resolveActivationJwt(t),
      dr: audited(audit, drService, {
        enablePrimary: { op: 'dr/primary/enable' },
        demote: { op: 'dr/primary/demote' },
        disablePrimary: { op: 'dr/primary/disable' },
        secondaryToken: { op: 'dr/primary/secondary-token', detail: ([r], res) => ({ secondary_id: r.id.slice(0, 128), ttl_seconds: r.ttlSeconds, sealed: r.secondaryPublicKey !== '', ...(res ? { issued: true } : {}) }) },
        revokeSecondary: { op: 'dr/primary/revoke-secondary', detail: ([id]) => ({ secondary_id: id.slice(0, 128) }) },
        generatePublicKey: { op: 'dr/secondary/generate-public-key' },
        enableSecondary: { op: 'dr/secondary/enable', detail: () => ({ mode: dr.state.mode }) },
        promote: { op: 'dr/secondary/promote', detail: ([r]) => ({ force: r.force }) },
        disableSecondary: { op: 'dr/secondary/disable' },
        updatePrimary: { op: 'dr/secondary/update-primary', detail: ([r], res) => ({ by: r.token === undefined ? 'addrs' : r.token === '' ? 'blank-token' : 'token', ...(res?.forgotten ? { forgot_cluster_id: res.forgotten.clusterId } : {}) }) },
        checkOperationToken: { op: 'dr/operation-token/use' },
        reindex: { op: 'dr/secondary/reindex', detail: reindexFlags },
        merkleCheck: { op: 'dr/secondary/merkle-check' },
      }),
    },
  };
}
