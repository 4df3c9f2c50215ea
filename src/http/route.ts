/**
 * Routes as declarations: a pattern, who may call it, where it is available, and per operation a
 * zod schema for its fields and a handler that receives them validated and typed.
 *
 *   const r = route({
 *     pattern: 'sys/policies/acl/:name', access: 'token',
 *     operations: { read: op(z.object({}), async (ctx) => ok(await svc.read(ctx.params.name)), 'Read an ACL policy.') },
 *   });
 */
import type { z } from 'zod';
import type { Operation } from '../vault/logical.js';
import type { Caller } from '../vault/caller.js';
import type { ApiRequest } from './request.js';
import type { Reply } from './reply.js';

export interface RouteContext<F> {
  readonly req: ApiRequest;
  readonly params: Readonly<Record<string, string>>;
  readonly fields: F;
  /** The authenticated caller; undefined on public routes. */
  readonly caller: Caller | undefined;
  /** Effective namespace (`a/b/` or ''), from the header and any path prefix. */
  readonly namespace: string;
}

export interface OperationSpec<F = unknown> {
  readonly fields: z.ZodType<F>;
  readonly handler: (ctx: RouteContext<F>) => Promise<Reply>;
  /**
   * One line saying what the operation does, in Vault's wording where Vault has the path: the
   * path help (`?help=1`, `tessera path-help`) prints it. Required, so no route goes undocumented.
   */
  readonly summary: string;
}

export const Access = {
  /** No token needed (init, unseal, health, replication status, unwrap with its own token). */
  public: 'public',
  /** A valid token whose policies grant the operation's capability on the path. */
  token: 'token',
  /** As `token`, and the policy must also grant `sudo` on the path. */
  sudo: 'sudo',
  /** Authorized by something in the body (a DR operation token, key shares), not a client token. */
  body: 'body',
} as const;
export type Access = (typeof Access)[keyof typeof Access];

export type Scope = 'node' | 'namespace';

export interface Route {
  readonly pattern: string;
  readonly access: Access;
  /**
   * What the route acts on. `node`: the node as a whole (seal, metrics, license, replication,
   * keyring and storage maintenance), so it answers only in the root namespace, whatever a
   * namespace's policies say (spec section 1.5's restricted endpoints are all `node`).
   * `namespace` (the default): the caller's namespace, resolved from header and path prefix.
   */
  readonly scope?: Scope;
  /**
   * Acts on this node's own tokens only (local class): a performance primary never runs it for a
   * forwarding secondary, whose forwarded requests are there to change replicated data.
   */
  readonly localState?: boolean;
  /** WIRE.md section 6: the short list a DR secondary still answers. */
  readonly drSecondary?: boolean;
  /**
   * How an HA performance standby treats a request of this route (standby-serves.ts): by default
   * it answers reads and lists itself (after its read barrier) and relays every other operation,
   * and relays every operation of a `node` route (state the active node may hold in memory:
   * replication, rekey and root generation progress). `serve`: answered by the standby for every
   * operation, read from storage (token lookups sent as POST, the keyring's status); a request
   * that turns out to write is relayed all the same. `relay`: always relayed.
   */
  readonly standby?: 'serve' | 'relay';
  /** Answers while sealed (init, unseal, seal-status, health, status). */
  readonly whileSealed?: boolean;
  /** License feature the route needs; `hostedOk` lets a hosted cluster in without one. */
  readonly license?: { readonly feature: string; readonly hostedOk?: boolean };
  readonly operations: Partial<Record<Operation, OperationSpec<any>>>;
  /**
   * A router instead of a handler: given the resolved namespace and namespace-relative path, the
   * route that serves it, chosen at request time (auth methods enabled under `auth/<path>`), or
   * undefined for a 404. The route it returns then goes through the usual access, field and
   * handler steps as if it had been declared.
   */
  readonly delegate?: (namespace: string, path: string) => Promise<Match | undefined>;
  /**
   * The mount (namespace-relative path) or child namespace a request of this route acts on, from
   * its parameters: a forwarding secondary's paths filter must let it hold it (dispatch.ts).
   */
  readonly names?: (params: Readonly<Record<string, string>>) => { readonly mount: string } | { readonly namespace: string };
}

/** Ties a handler's field type to its schema. */
export function op<F>(fields: z.ZodType<F>, handler: (ctx: RouteContext<F>) => Promise<Reply>, summary: string): OperationSpec<F> {
  return { fields, handler, summary };
}

export interface Match {
  readonly route: Route;
  readonly params: Record<string, string>;
}

/** Segment matcher: `:name` takes one segment, `*name` (last) takes the rest, possibly empty. */
export function matchPattern(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = path === '' ? [] : path.split('/');
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    if (w.startsWith('*')) {
      params[w.slice(1)] = got.slice(i).join('/');
      return params;
    }
    const g = got[i];
    if (g === undefined) return undefined;
    if (w.startsWith(':')) params[w.slice(1)] = g;
    else if (w !== g) return undefined;
  }
  return got.length === want.length ? params : undefined;
}

export function findRoute(routes: readonly Route[], path: string): Match | undefined {
  for (const route of routes) {
    const params = matchPattern(route.pattern, path);
    if (params !== undefined) return { route, params };
  }
  return undefined;
}
