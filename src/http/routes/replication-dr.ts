/**
 * DR replication's primary and secondary endpoints (spec sections 4.1, 4.4, 4.5, 5). Primary
 * operations and secondary enable need a sudo token; operations on a DR secondary are authorized
 * by a DR operation token in the body, since the secondary serves no other authentication.
 */
import { z } from 'zod';
import { InvalidRequest } from '../../core/errors.js';
import { boolish, duration, stringList } from '../fields.js';
import { noContent, ok, type Reply } from '../reply.js';
import { op, type Route, type RouteContext } from '../route.js';

/** What these routes need from the DR driver and the operation tokens. */
export interface DrService {
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
  /** Throws unless `token` is a valid DR operation token of this cluster. */
  checkOperationToken(token: string): Promise<void>;
  reindex(opts: { diff: boolean; force: boolean; skipFlush: boolean }): Promise<{ warnings: string[] }>;
  merkleCheck(): Promise<Record<string, unknown>>;
}

const P = 'sys/replication/dr/primary';
const S = 'sys/replication/dr/secondary';
const LICENSE = { feature: 'dr-replication' } as const;
const required = (name: string) => z.string({ error: `missing required field "${name}"` }).min(1, `missing required field "${name}"`);
const opToken = required('dr_operation_token');

export function drRoutes(dr: DrService): Route[] {
  const sudo = (pattern: string, fields: z.ZodType<any>, handler: (f: any, ctx: RouteContext<any>) => Promise<Reply>): Route => ({
    pattern, access: 'sudo', scope: 'node', license: LICENSE, operations: { update: op(fields, async (ctx) => handler(ctx.fields, ctx)) },
  });
  const withOpToken = <F extends { dr_operation_token: string }>(pattern: string, fields: z.ZodType<F>, handler: (f: F) => Promise<Reply>): Route => ({
    pattern, access: 'body', scope: 'node', drSecondary: true, license: LICENSE,
    operations: {
      update: op(fields, async ({ fields: f }) => {
        await dr.checkOperationToken(f.dr_operation_token);
        return handler(f);
      }),
    },
  });
  const Reindex = z.object({ dr_operation_token: opToken, diff: boolish.default(false), force: boolish.default(false), skip_flush: boolish.default(false) });
  const UpdatePrimary = z.object({
    dr_operation_token: opToken,
    token: z.string().optional(),
    update_primary_addrs: stringList.optional(),
    primary_api_addr: z.string().default(''),
    ca_file: z.string().default(''),
    ca_path: z.string().default(''),
  });

  return [
    sudo(`${P}/enable`, z.object({ primary_cluster_addr: z.string().default('') }), async (f) => {
      await dr.enablePrimary(f.primary_cluster_addr);
      return noContent();
    }),
    sudo(`${P}/demote`, z.object({}).passthrough(), async () => {
      const report = await dr.demote();
      const unconfirmed = Array.isArray(report['unconfirmed']) ? report['unconfirmed'].length : 0;
      const warnings = unconfirmed > 0
        ? [`${unconfirmed} secondaries did not confirm the last WAL index; promoting one of them may lose writes (see unconfirmed)`]
        : [];
      return ok({ ...report }, warnings.length > 0 ? { warnings } : {});
    }),
    sudo(`${P}/disable`, z.object({}).passthrough(), async () => {
      await dr.disablePrimary();
      return noContent();
    }),
    sudo(`${P}/secondary-token`, z.object({ id: required('id'), ttl: duration.default(1800), secondary_public_key: z.string().default('') }), async (f) => {
      const r = await dr.secondaryToken({ id: f.id, ttlSeconds: f.ttl, secondaryPublicKey: f.secondary_public_key });
      if (r.token !== undefined) return ok({ token: r.token });
      return { kind: 'envelope', data: null, wrapInfo: r.wrapInfo ?? null };
    }),
    sudo(`${P}/revoke-secondary`, z.object({ id: required('id') }), async (f) => {
      await dr.revokeSecondary(f.id);
      return noContent();
    }),
    sudo(`${S}/generate-public-key`, z.object({}).passthrough(), async () => ok({ secondary_public_key: await dr.generatePublicKey() })),
    sudo(`${S}/enable`, z.object({ token: required('token'), primary_api_addr: z.string().default(''), ca_file: z.string().default(''), ca_path: z.string().default('') }), async (f, ctx) => {
      // A root caller gets its token back if the activation fails after the wipe (nothing else
      // could authorize a new secondary/enable on the emptied node).
      const restore = ctx.caller?.root === true ? { restoreToken: ctx.caller.token } : {};
      await dr.enableSecondary({ token: f.token, primaryApiAddr: f.primary_api_addr, caFile: f.ca_file, caPath: f.ca_path, ...restore });
      return noContent();
    }),
    withOpToken(`${S}/promote`, z.object({ dr_operation_token: opToken, primary_cluster_addr: z.string().default(''), force: boolish.default(false) }), async (f) => {
      await dr.promote({ force: f.force, primaryClusterAddr: f.primary_cluster_addr });
      return noContent();
    }),
    withOpToken(`${S}/disable`, z.object({ dr_operation_token: opToken }), async () => {
      await dr.disableSecondary();
      return noContent();
    }),
    withOpToken(`${S}/update-primary`, UpdatePrimary, async (f) => {
      if (f.token !== undefined && f.update_primary_addrs !== undefined) {
        throw new InvalidRequest('token and update_primary_addrs are mutually exclusive; send exactly one');
      }
      const { forgotten } = await dr.updatePrimary({
        ...(f.token !== undefined ? { token: f.token } : {}),
        ...(f.update_primary_addrs !== undefined ? { addrs: f.update_primary_addrs } : {}),
        primaryApiAddr: f.primary_api_addr,
        caFile: f.ca_file,
        caPath: f.ca_path,
      });
      if (forgotten === undefined) return noContent();
      // Vault-compatible (a blank token still clears), but never silent.
      const at = forgotten.primaryClusterAddr === '' ? 'no address' : `cluster address ${forgotten.primaryClusterAddr}`;
      return ok(null, {
        warnings: [
          `the token was blank: this secondary forgot its primary (${at}, API address ${forgotten.primaryApiAddr || 'none'}) and its credentials for replication set ${forgotten.clusterId}; ` +
            'it no longer replicates until update-primary is called with a token from a primary of the set',
        ],
      });
    }),
    withOpToken(`${S}/reindex`, Reindex, async (f) => {
      const { warnings } = await dr.reindex({ diff: f.diff, force: f.force, skipFlush: f.skip_flush });
      return ok(null, { warnings });
    }),
    withOpToken(`${S}/merkle-check`, z.object({ dr_operation_token: opToken }), async () => ok(await dr.merkleCheck())),
  ];
}
