/**
 * The operations replication offers operators, per facet, as the HTTP routes call them: each
 * kind's primary and secondary operations, DR's operation-token checks and Merkle maintenance,
 * the DR operation-token generation, and the performance paths filters. Every operation writes
 * one operator audit line and one replication event (audit.ts). The rules across kinds apply
 * here: after each DR operation the performance role is synced again (a DR secondary holds its
 * performance role inert), and a performance operation is refused while `performanceRefusal`
 * (the policy table's crossKindRefusal) names a reason. DR-secondary-only operations refuse
 * elsewhere, naming the mode, before any token is checked.
 *
 *   const facets = buildFacets({ drivers, vault, tokens, local, filters, engine, audit, events, rules });
 *   await facets.dr.enablePrimary('');      // {"audit":"replication","op":"dr/primary/enable","outcome":"ok"}
 */
import type { Logger } from 'pino';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import type { DynamicFilter } from '../core/paths-filter.js';
import type { Kind } from '../core/replication/index.js';
import type { StorageEngine } from '../storage/engine.js';
import { audited, type AuditSpecs } from './audit.js';
import type { VaultCatalog } from './catalog.js';
import type { ReplicationDriver } from './driver.js';
import type { ReplicationEvents } from './events.js';
import type { LocalReplication } from './local.js';
import type { AttemptStatus, OperationTokens, StartRequest, UpdateRequest } from './operation-token.js';
import { readSecondaryDynamicFilter, type PathsFilters } from './paths-filters.js';

/** One kind's primary and secondary operations (the driver's, with the rules across kinds applied). */
export type KindOperations = Pick<ReplicationDriver,
  'enablePrimary' | 'demote' | 'disablePrimary' | 'secondaryToken' | 'revokeSecondary' | 'generatePublicKey' | 'enableSecondary' | 'promote' | 'disableSecondary' | 'updatePrimary'>;

export interface ReindexOptions {
  readonly diff: boolean;
  readonly force: boolean;
  readonly skipFlush: boolean;
}

/** DR's additions: the operation token that authorizes secondary operations, and Merkle maintenance. */
export interface DrOperations extends KindOperations {
  /** Throws unless `token` is a DR operation token of this cluster, or a batch token of its primary granting `update` on `path`. */
  checkOperationToken(token: string, path: string): Promise<void>;
  reindex(opts: ReindexOptions): Promise<{ warnings: string[] }>;
  merkleCheck(): Promise<Record<string, unknown>>;
}

/** Generation and revocation of DR operation tokens (DR secondary only). */
export interface DrTokenOperations {
  start(req: StartRequest): Promise<AttemptStatus>;
  status(): Promise<AttemptStatus>;
  cancel(): Promise<void>;
  update(req: UpdateRequest): Promise<AttemptStatus>;
  revoke(token: string): Promise<void>;
}

/** Performance paths filters: the primary's per-secondary filter, and both ends' dynamic filter. */
export interface PathsFilterOperations {
  set(id: string, body: { mode: string; paths: readonly string[] }): Promise<unknown>;
  read(id: string): Promise<{ mode: string; paths: readonly string[] } | undefined>;
  remove(id: string): Promise<void>;
  primaryDynamic(id: string): Promise<DynamicFilter>;
  secondaryDynamic(id: string): Promise<DynamicFilter>;
}

/** The rules across kinds and the modes, as the unit knows them now. */
export interface CrossKindRules {
  /** Loads or unloads the performance role as the DR role requires. */
  syncPerformance(): Promise<void>;
  /** After a DR promote: the performance primary role held takes this cluster's address. */
  adoptPromotedClusterAddr(): Promise<void>;
  /** Why a performance operation is refused on this node now (crossKindRefusal), if it is. */
  performanceRefusal(): string | undefined;
  drMode(): string;
  performanceMode(): string;
}

export interface FacetOptions {
  readonly drivers: Readonly<Record<Kind, ReplicationDriver>>;
  readonly vault: VaultCatalog;
  readonly tokens: OperationTokens;
  readonly local: LocalReplication;
  readonly filters: PathsFilters;
  readonly engine: Pick<StorageEngine, 'readRaw'>;
  readonly audit: Logger;
  readonly events: ReplicationEvents;
  readonly rules: CrossKindRules;
}

export interface Facets {
  readonly dr: DrOperations;
  readonly performance: KindOperations;
  readonly drTokens: DrTokenOperations;
  readonly pathsFilters: PathsFilterOperations;
}

type Wrap = <A extends unknown[], R>(fn: (...a: A) => Promise<R>) => (...a: A) => Promise<R>;
const asIs: Wrap = (fn) => fn;

/** The driver's operations, each wrapped by `guard`; those that change the role also by `after`. */
function kindOperations(d: ReplicationDriver, guard: Wrap, after: Wrap, prepare: () => Promise<void>): KindOperations {
  const changes: Wrap = (fn) => guard(after(fn));
  return {
    enablePrimary: changes(async (addr: string) => {
      await d.enablePrimary(addr);
      // Before any secondary can connect: filters judge mount tables by their per-mount keys, and
      // a secondary mints batch tokens with the primary's key, which it may not make itself.
      if (d.kind === 'performance') await prepare();
    }),
    demote: changes(() => d.demote()),
    disablePrimary: changes(() => d.disablePrimary()),
    secondaryToken: guard((r: Parameters<KindOperations['secondaryToken']>[0]) => d.secondaryToken(r)),
    revokeSecondary: guard((id: string) => d.revokeSecondary(id)),
    generatePublicKey: guard(() => d.generatePublicKey()),
    enableSecondary: changes((r: Parameters<KindOperations['enableSecondary']>[0]) => d.enableSecondary(r)),
    promote: changes(async (r: Parameters<KindOperations['promote']>[0]) => {
      await d.promote(r);
      if (d.kind === 'performance') await prepare();
    }),
    disableSecondary: changes(() => d.disableSecondary()),
    updatePrimary: guard((r: Parameters<KindOperations['updatePrimary']>[0]) => d.updatePrimary(r)),
  };
}

function kindAudit(kind: Kind, d: ReplicationDriver): AuditSpecs<KindOperations> {
  return {
    enablePrimary: { op: `${kind}/primary/enable` },
    demote: { op: `${kind}/primary/demote` },
    disablePrimary: { op: `${kind}/primary/disable` },
    secondaryToken: { op: `${kind}/primary/secondary-token`, detail: ([r], res) => ({ secondary_id: r.id.slice(0, 128), ttl_seconds: r.ttlSeconds, sealed: r.secondaryPublicKey !== '', ...(res ? { issued: true } : {}) }) },
    revokeSecondary: { op: `${kind}/primary/revoke-secondary`, detail: ([id]) => ({ secondary_id: id.slice(0, 128) }) },
    generatePublicKey: { op: `${kind}/secondary/generate-public-key` },
    enableSecondary: { op: `${kind}/secondary/enable`, detail: () => ({ mode: d.state.mode }) },
    promote: { op: `${kind}/secondary/promote`, detail: ([r]) => ({ force: r.force }) },
    disableSecondary: { op: `${kind}/secondary/disable` },
    updatePrimary: {
      op: `${kind}/secondary/update-primary`,
      detail: ([r], res) => ({ by: r.token === undefined ? 'addrs' : r.token === '' ? 'blank-token' : 'token', ...(res?.forgotten ? { forgot_cluster_id: res.forgotten.clusterId } : {}) }),
    },
  };
}

const reindexFlags = ([o]: [ReindexOptions]) => ({ diff: o.diff, force: o.force });

export function buildFacets(o: FacetOptions): Facets {
  const { drivers, vault, tokens, local, filters, rules } = o;
  const syncAfter: Wrap = (fn) => async (...a) => {
    try {
      return await fn(...a);
    } finally {
      await rules.syncPerformance();
    }
  };
  /** A performance operation on a DR secondary: refused, naming the rule (nothing is loaded there). */
  const performanceGate: Wrap = (fn) => async (...a) => {
    const refusal = rules.performanceRefusal();
    if (refusal !== undefined) throw new InvalidRequest(refusal);
    return fn(...a);
  };
  const secondaryOnly: Wrap = (fn) => async (...a) => {
    const mode = rules.drMode();
    if (mode !== 'secondary') throw new InvalidRequest(`this node is not a DR secondary (dr mode: ${mode})`);
    return fn(...a);
  };
  const preparePerformancePrimary = async (): Promise<void> => {
    await vault.migrateLegacyTables();
    await vault.ensureBatchKey();
  };

  const drKind = kindOperations(drivers.dr, asIs, syncAfter, preparePerformancePrimary);
  const dr: DrOperations = {
    ...drKind,
    promote: async (r) => {
      await drKind.promote(r);
      await rules.adoptPromotedClusterAddr();
    },
    checkOperationToken: secondaryOnly(async (t: string, path: string) => {
      if (vault.isBatchToken(t)) return vault.checkBatchOperationToken(t, path);
      if (!(await tokens.validate(t))) throw new PermissionDenied('invalid DR operation token');
    }),
    reindex: secondaryOnly((opts: ReindexOptions) => local.reindex(opts)),
    merkleCheck: secondaryOnly(() => local.merkleCheck()),
  };
  const drTokens: DrTokenOperations = {
    start: secondaryOnly((r: StartRequest) => tokens.start(r)),
    status: secondaryOnly(() => tokens.status()),
    cancel: secondaryOnly(() => tokens.cancel()),
    update: secondaryOnly((r: UpdateRequest) => tokens.update(r)),
    revoke: secondaryOnly(async (t: string) => {
      if (vault.isBatchToken(t)) throw new InvalidRequest('a batch token is revoked on the primary (auth/token/revoke); the revocation replicates to this secondary');
      return tokens.revoke(t);
    }),
  };
  const perf = drivers.performance;
  /** The secondary's dynamic filter: what its primary last told it (paths-filters.ts), for its own id only. */
  const secondaryDynamic = async (id: string): Promise<DynamicFilter> => {
    const s = perf.isLoaded ? perf.state : undefined;
    if (s?.mode !== 'secondary') throw new InvalidRequest(`this cluster is not a performance secondary (performance mode: ${rules.performanceMode()})`);
    if (s.secondaryId !== id) throw new InvalidRequest(`this performance secondary is "${s.secondaryId ?? ''}", not "${id.slice(0, 64)}"`);
    return readSecondaryDynamicFilter(o.engine);
  };
  const pathsFilters: PathsFilterOperations = {
    set: (id, body) => filters.set(id, body),
    read: (id) => filters.read(id),
    remove: (id) => filters.remove(id),
    primaryDynamic: (id) => filters.dynamic(id),
    secondaryDynamic,
  };

  const { audit, events } = o;
  return {
    dr: audited(audit, dr, {
      ...kindAudit('dr', drivers.dr),
      checkOperationToken: { op: 'dr/operation-token/use', detail: ([t, path]) => ({ token_type: vault.isBatchToken(t) ? 'batch' : 'operation', path }) },
      reindex: { op: 'dr/secondary/reindex', detail: reindexFlags },
      merkleCheck: { op: 'dr/secondary/merkle-check' },
    }, events),
    performance: audited(audit, kindOperations(perf, performanceGate, asIs, preparePerformancePrimary), kindAudit('performance', perf), events),
    drTokens: audited(audit, drTokens, {
      start: { op: 'dr/generate-operation-token/attempt' },
      cancel: { op: 'dr/generate-operation-token/cancel' },
      update: { op: 'dr/generate-operation-token/update', detail: (_a, r) => (r ? { progress: r.progress, required: r.required, token_created: r.complete } : {}) },
      revoke: { op: 'dr/operation-token/delete' },
    }, events),
    pathsFilters: audited(audit, pathsFilters, {
      set: { op: 'performance/primary/paths-filter/write', detail: ([id, b]) => ({ secondary_id: id.slice(0, 128), mode: b.mode, paths: b.paths.length }) },
      remove: { op: 'performance/primary/paths-filter/delete', detail: ([id]) => ({ secondary_id: id.slice(0, 128) }) },
    }, events),
  };
}
