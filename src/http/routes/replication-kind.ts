/**
 * The primary and secondary endpoints of one kind of replication, `sys/replication/:kind/...`
 * (spec sections 4.1, 4.4, 4.5, 5), generated for both kinds from KIND_POLICY: the license
 * feature, and how secondary operations are authorized. Primary operations and secondary enable
 * need a sudo token; promote, disable and update-primary on a DR secondary are authorized by a DR
 * operation token in the body (it serves no other authentication), on a performance secondary by
 * a sudo token of its own (its tokens are local). reindex and merkle-check are DR only.
 *
 *   [...replicationKindRoutes('dr', drService), ...replicationKindRoutes('performance', perfService)]
 */
import { z } from 'zod';
import { vaultClusterAddr } from '../../core/cluster-addr.js';
import { Internal, InvalidRequest } from '../../core/errors.js';
import { KIND_POLICY, type Kind } from '../../core/replication/index.js';
import { boolish, duration, stringList } from '../fields.js';
import { bare, noContent, ok, type Reply } from '../reply.js';
import { op, type Route, type RouteContext } from '../route.js';

/** What these routes need from one kind's driver (and, for DR, the operation tokens). */
export interface KindService {
  enablePrimary(primaryClusterAddr: string): Promise<void>;
  /** Drains to connected secondaries first; the report says who confirmed the last index. */
  demote(): Promise<Record<string, unknown>>;
  disablePrimary(): Promise<void>;
  secondaryToken(req: { id: string; ttlSeconds: number; secondaryPublicKey: string }): Promise<{ wrapInfo?: Record<string, unknown>; token?: string }>;
  revokeSecondary(id: string): Promise<void>;
  generatePublicKey(): Promise<string>;
  /** `restoreToken`: the caller's root token, restored if the activation fails after the wipe. */
  enableSecondary(req: { token: string; primaryApiAddr: string; caFile: string; caPath: string; restoreToken?: string }): Promise<void>;
  promote(req: { force: boolean; primaryClusterAddr: string }): Promise<void>;
  disableSecondary(): Promise<void>;
  /** `forgotten`: what a blank token made the secondary forget. */
  updatePrimary(req: { token?: string; addrs?: readonly string[]; primaryApiAddr: string; caFile: string; caPath: string }): Promise<{ forgotten?: { clusterId: string; primaryClusterAddr: string; primaryApiAddr: string } }>;
}

/** DR's additions: the operation token that authorizes secondary operations, and Merkle maintenance. */
export interface DrService extends KindService {
  /**
   * Throws unless `token` is a valid DR operation token of this cluster, or a batch token of its
   * primary whose policies grant `update` on `path` (the DR secondary path being called).
   */
  checkOperationToken(token: string, path: string): Promise<void>;
  reindex(opts: { diff: boolean; force: boolean; skipFlush: boolean }): Promise<{ warnings: string[] }>;
  merkleCheck(): Promise<Record<string, unknown>>;
}

/** Performance paths filters (spec 4.2): the primary's per-secondary filter, and both ends' dynamic filter. */
export interface PathsFilterService {
  set(id: string, body: { mode: string; paths: readonly string[] }): Promise<unknown>;
  /** As the operator wrote it (paths keep their trailing '/'); undefined when `id` has no filter. */
  read(id: string): Promise<{ mode: string; paths: readonly string[] } | undefined>;
  remove(id: string): Promise<void>;
  primaryDynamic(id: string): Promise<{ dynamic_filtered_mounts: string[]; dynamic_filtered_namespaces: string[] }>;
  secondaryDynamic(id: string): Promise<{ dynamic_filtered_mounts: string[]; dynamic_filtered_namespaces: string[] }>;
}

/**
 * `sys/replication/performance/{primary/paths-filter,primary/dynamic-filter,secondary/dynamic-filter}/:id`:
 * node scope, sudo, the performance license. A filter reads back as it was written; no filter is
 * a 200 with an empty body (spec 4.2, WIRE.md 8).
 */
export function pathsFilterRoutes(svc: PathsFilterService): Route[] {
  const LICENSE = { feature: KIND_POLICY.performance.license } as const;
  const P = 'sys/replication/performance/primary';
  const S = 'sys/replication/performance/secondary';
  const id = (ctx: RouteContext<unknown>): string => ctx.params['id'] ?? '';
  const Body = z.object({ mode: z.string().default('allow'), paths: stringList.default([]) });
  const empty = z.object({});
  const base = { access: 'sudo', scope: 'node', license: LICENSE } as const;
  return [
    {
      ...base,
      pattern: `${P}/paths-filter/:id`,
      operations: {
        update: op(Body, async (ctx) => {
          await svc.set(id(ctx), ctx.fields);
          return noContent();
        }, 'Set the paths filter of a performance secondary.'),
        read: op(empty, async (ctx) => {
          const f = await svc.read(id(ctx));
          return f === undefined ? bare(200, undefined) : ok({ mode: f.mode, paths: [...f.paths] });
        }, 'Read the paths filter of a performance secondary.'),
        delete: op(empty, async (ctx) => {
          await svc.remove(id(ctx));
          return noContent();
        }, 'Delete the paths filter of a performance secondary.'),
      },
    },
    { ...base, pattern: `${P}/dynamic-filter/:id`, operations: { read: op(empty, async (ctx) => ok({ ...(await svc.primaryDynamic(id(ctx))) }), 'Read the mounts and namespaces the primary filters out for a performance secondary.') } },
    { ...base, pattern: `${S}/dynamic-filter/:id`, operations: { read: op(empty, async (ctx) => ok({ ...(await svc.secondaryDynamic(id(ctx))) }), 'Read the mounts and namespaces this performance secondary filters out.') } },
  ];
}

const required = (name: string) => z.string({ error: `missing required field "${name}"` }).min(1, `missing required field "${name}"`);
const opToken = required('dr_operation_token');
/** A secondary operation's fields alone, and with the DR operation token (KIND_POLICY's secondaryAuth picks one). */
const secondaryFields = <S extends z.ZodRawShape>(fields: z.ZodObject<S>) => ({ fields, withToken: fields.extend({ dr_operation_token: opToken }) });

export function replicationKindRoutes(kind: 'dr', dr: DrService): Route[];
export function replicationKindRoutes(kind: 'performance', svc: KindService): Route[];
export function replicationKindRoutes(kind: Kind, svc: KindService | DrService): Route[] {
  const policy = KIND_POLICY[kind];
  const P = `sys/replication/${kind}/primary`;
  const S = `sys/replication/${kind}/secondary`;
  const LICENSE = { feature: policy.license } as const;
  // DR's additions, present on the DR service only (the overloads above say which kind passes which).
  const drOnly = 'checkOperationToken' in svc ? svc : undefined;
  const name = policy.label;
  const sudo = <F>(pattern: string, summary: string, fields: z.ZodType<F>, handler: (f: F, ctx: RouteContext<F>) => Promise<Reply>): Route => ({
    pattern, access: 'sudo', scope: 'node', license: LICENSE, operations: { update: op(fields, async (ctx) => handler(ctx.fields, ctx), summary) },
  });
  const withOpToken = <F extends { dr_operation_token: string }>(pattern: string, summary: string, fields: z.ZodType<F>, handler: (f: F) => Promise<Reply>): Route => ({
    pattern, access: 'body', scope: 'node', drSecondary: true, license: LICENSE,
    operations: {
      update: op(fields, async ({ fields: f }) => {
        if (!drOnly) throw new Internal(`${policy.label} replication has no DR operation tokens`);
        await drOnly.checkOperationToken(f.dr_operation_token, pattern);
        return handler(f);
      }, summary),
    },
  });
  /** A secondary operation, authorized as the kind says (KIND_POLICY.secondaryAuth). */
  const secondaryOp = <F, G extends F & { dr_operation_token: string }>(pattern: string, summary: string, schemas: { fields: z.ZodType<F>; withToken: z.ZodType<G> }, handler: (f: F) => Promise<Reply>): Route =>
    policy.secondaryAuth === 'dr-operation-token'
      ? withOpToken(pattern, summary, schemas.withToken, handler)
      : sudo(pattern, summary, schemas.fields, async (f) => handler(f));
  const Reindex = z.object({ dr_operation_token: opToken, diff: boolish.default(false), force: boolish.default(false), skip_flush: boolish.default(false) });
  const UpdatePrimary = z.object({
    token: z.string().optional(),
    update_primary_addrs: stringList.optional(),
    primary_api_addr: z.string().default(''),
    ca_file: z.string().default(''),
    ca_path: z.string().default(''),
  });

  return [
    sudo(`${P}/enable`, `Enable ${name} replication on this node as a primary.`, z.object({ primary_cluster_addr: z.string().default('') }), async (f) => {
      await svc.enablePrimary(f.primary_cluster_addr);
      return noContent();
    }),
    sudo(`${P}/demote`, `Demote this ${name} primary to a secondary of its replication set.`, z.object({}).passthrough(), async () => {
      const report = await svc.demote();
      const unconfirmed = Array.isArray(report['unconfirmed']) ? report['unconfirmed'].length : 0;
      const warnings = unconfirmed > 0
        ? [`${unconfirmed} secondaries did not confirm the last WAL index; promoting one of them may lose writes (see unconfirmed)`]
        : [];
      return ok({ ...report }, warnings.length > 0 ? { warnings } : {});
    }),
    sudo(`${P}/disable`, `Disable ${name} replication on this primary.`, z.object({}).passthrough(), async () => {
      await svc.disablePrimary();
      return noContent();
    }),
    sudo(`${P}/secondary-token`, `Generate a wrapped token that activates a ${name} secondary.`, z.object({ id: required('id'), ttl: duration.default(1800), secondary_public_key: z.string().default('') }), async (f) => {
      const r = await svc.secondaryToken({ id: f.id, ttlSeconds: f.ttl, secondaryPublicKey: f.secondary_public_key });
      if (r.token !== undefined) return ok({ token: r.token });
      return { kind: 'envelope', data: null, wrapInfo: r.wrapInfo ?? null };
    }),
    sudo(`${P}/revoke-secondary`, `Revoke a ${name} secondary's permission to connect to this primary.`, z.object({ id: required('id') }), async (f) => {
      await svc.revokeSecondary(f.id);
      return noContent();
    }),
    sudo(`${S}/generate-public-key`, 'Generate the public key a primary encrypts the secondary token with.', z.object({}).passthrough(), async () => ok({ secondary_public_key: await svc.generatePublicKey() })),
    sudo(`${S}/enable`, `Enable ${name} replication on this node as a secondary, with a token from its primary.`, z.object({ token: required('token'), primary_api_addr: z.string().default(''), ca_file: z.string().default(''), ca_path: z.string().default('') }), async (f, ctx) => {
      // A root caller gets its token back if the activation fails after the wipe (nothing else
      // could authorize a new secondary/enable on the emptied node).
      const restore = ctx.caller?.root === true ? { restoreToken: ctx.caller.token } : {};
      await svc.enableSecondary({ token: f.token, primaryApiAddr: f.primary_api_addr, caFile: f.ca_file, caPath: f.ca_path, ...restore });
      return noContent();
    }),
    secondaryOp(`${S}/promote`, `Promote this ${name} secondary to a primary.`, secondaryFields(z.object({ primary_cluster_addr: z.string().default(''), force: boolish.default(false) })), async (f) => {
      await svc.promote({ force: f.force, primaryClusterAddr: f.primary_cluster_addr });
      return noContent();
    }),
    secondaryOp<object, { dr_operation_token: string }>(`${S}/disable`, `Disable ${name} replication on this secondary.`, secondaryFields(z.object({})), async () => {
      await svc.disableSecondary();
      return noContent();
    }),
    secondaryOp(`${S}/update-primary`, `Point this ${name} secondary at a new primary.`, secondaryFields(UpdatePrimary), async (f) => {
      if (f.token !== undefined && f.update_primary_addrs !== undefined) {
        throw new InvalidRequest('token and update_primary_addrs are mutually exclusive; send exactly one');
      }
      const { forgotten } = await svc.updatePrimary({
        ...(f.token !== undefined ? { token: f.token } : {}),
        ...(f.update_primary_addrs !== undefined ? { addrs: f.update_primary_addrs } : {}),
        primaryApiAddr: f.primary_api_addr,
        caFile: f.ca_file,
        caPath: f.ca_path,
      });
      if (forgotten === undefined) return noContent();
      // Vault-compatible (a blank token still clears), but never silent.
      const at = forgotten.primaryClusterAddr === '' ? 'no address' : `cluster address ${vaultClusterAddr(forgotten.primaryClusterAddr)}`;
      return ok(null, {
        warnings: [
          `the token was blank: this secondary forgot its primary (${at}, API address ${forgotten.primaryApiAddr || 'none'}) and its credentials for replication set ${forgotten.clusterId}; ` +
            'it no longer replicates until update-primary is called with a token from a primary of the set',
        ],
      });
    }),
    ...(drOnly
      ? [
          withOpToken(`${S}/reindex`, 'Rebuild the Merkle index of this DR secondary.', Reindex, async (f) => {
            const { warnings } = await drOnly.reindex({ diff: f.diff, force: f.force, skipFlush: f.skip_flush });
            return ok(null, { warnings });
          }),
          withOpToken(`${S}/merkle-check`, "Check this DR secondary's Merkle index against its storage.", z.object({ dr_operation_token: opToken }), async () => ok(await drOnly.merkleCheck())),
        ]
      : []),
  ];
}
