/**
 * One request's way through the node, in a fixed order: route or mount -> DR secondary gate ->
 * seal gate -> namespace (header, then path prefix) -> node-scope rule -> operation ->
 * authentication and ACL -> license -> field validation -> handler -> optional response wrapping.
 * Every refusal before authentication spends nothing (no token use). A delegating route (auth
 * methods under `auth/<mount>/`) is replaced by the route it picks before the node-scope rule.
 * On a performance secondary, a write that reaches a replicated key goes to the primary instead
 * (`forwardable`); the primary runs it through `dispatchForwarded`.
 *
 *   const { status, body } = await dispatch(services, routes, apiRequest);
 */
import { DrSecondaryPathDisabled, InvalidRequest, InvalidRequestWithData, NotFound, NotFoundWithData, PermissionDenied, ReplicatedWriteRefused, RootNamespaceOnly, Sealed, NotInitialized, UnsupportedOperation } from '../core/errors.js';
import type { ForwardOutcome } from './forwarding.js';
import { forwardRequestOf, replyOfForwarded } from './forwarding.js';
import type { ForwardScope } from '../core/paths-filter.js';
import type { Caller } from '../vault/caller.js';
import type { GrantCapability } from '../vault/policy.js';
import type { LogicalResponse, Operation, PathHelp } from '../vault/logical.js';
import type { ForwardRequest } from '../replication/index.js';
import type { ApiRequest } from './request.js';
import { parseFields } from './fields.js';
import { bare, emptyList, envelope, injectedEnvelope, type Reply, type StreamSource } from './reply.js';
import { helpBody, routeHelp, wantsHelp } from './help.js';
import { findRoute, type Match, type Route } from './route.js';
import { audited, deniedAudited } from './audit.js';
import type { AuditTrail } from '../vault/audit/trail.js';

/** What the HTTP layer needs from the vault core (which implements it). */
export interface CoreServices {
  initialized(): Promise<boolean>;
  sealed(): boolean;
  resolveNamespace(headerNs: string, path: string): { namespace: string; path: string };
  /** Validates the token and builds its ACL; `check` may refuse it before a use is spent. PermissionDenied otherwise. */
  authenticate(token: string | undefined, namespace: string, check?: (caller: Caller) => void): Promise<Caller>;
  requireLicense(feature: string, hostedOk: boolean): void;
  /** A mounted engine's answer, or undefined when no mount serves the path. */
  logical(namespace: string, path: string, operation: Operation, data: Record<string, unknown>): Promise<{ response: LogicalResponse | null } | undefined>;
  wrap(reply: { data: Record<string, unknown> | null; auth?: Record<string, unknown> | null }, ttlSeconds: number, creationPath: string): Promise<Record<string, unknown>>;
  /** Path help of a path under a mounted engine (`?help=1`); undefined when no mount serves it. */
  engineHelp(namespace: string, path: string): Promise<PathHelp | undefined>;
  /** The audit devices every request goes through (absent: nothing audited). */
  readonly auditTrail?: AuditTrail;
}

/** What the HTTP layer needs from replication (its unit's `requests` facet implements it). */
export interface ReplicationGates {
  /** Whether this cluster is a DR secondary (it then serves only the paths routes mark `drSecondary`). */
  drSecondary(): boolean;
  /**
   * A performance secondary's way to its primary for a write it may not apply itself: the
   * primary's reply once this node has applied it (or with a warning saying it has not yet).
   * Absent on nodes that never forward.
   */
  forwardWrite?: (req: ForwardRequest) => Promise<ForwardOutcome>;
  /** While applied replicated data is not yet visible (caches reloading), the wait for it. */
  visible?(): Promise<void> | undefined;
}

/** Everything a request's way through the node needs: the node composes it from the core and replication. */
export interface Services extends CoreServices, ReplicationGates {}

/** The services of a node: the core's, with replication's gates beside them (neither knows the other). */
export function composeServices(core: CoreServices, gates: ReplicationGates): Services {
  return {
    initialized: () => core.initialized(),
    sealed: () => core.sealed(),
    resolveNamespace: (headerNs, path) => core.resolveNamespace(headerNs, path),
    authenticate: (token, namespace, check) => core.authenticate(token, namespace, check),
    requireLicense: (feature, hostedOk) => core.requireLicense(feature, hostedOk),
    logical: (namespace, path, operation, data) => core.logical(namespace, path, operation, data),
    wrap: (reply, ttlSeconds, creationPath) => core.wrap(reply, ttlSeconds, creationPath),
    engineHelp: (namespace, path) => core.engineHelp(namespace, path),
    ...(core.auditTrail ? { auditTrail: core.auditTrail } : {}),
    drSecondary: () => gates.drSecondary(),
    ...(gates.forwardWrite ? { forwardWrite: gates.forwardWrite } : {}),
    ...(gates.visible ? { visible: () => gates.visible?.() } : {}),
  };
}

export interface Dispatched {
  readonly status: number;
  readonly body: unknown;
  readonly contentType?: string;
  /** A streamed reply (reply.ts `streamed`): written chunk by chunk instead of `body`. */
  readonly stream?: StreamSource;
}

const CAPABILITY: Readonly<Record<Operation, readonly GrantCapability[]>> = {
  read: ['read'],
  list: ['list'],
  create: ['create', 'update'],
  update: ['create', 'update'],
  delete: ['delete'],
  patch: ['patch'],
};

/** Namespace-relative path, as the caller's policies see it. */
function policyPath(caller: Caller, namespace: string, path: string): string {
  return namespace.slice(caller.namespace.length) + path;
}

function authorize(caller: Caller, namespace: string, path: string, operation: Operation, sudo: boolean): void {
  if (!namespace.startsWith(caller.namespace)) throw new PermissionDenied();
  // A LIST is of a directory: Vault appends its '/' (http/logical.go), so `cubbyhole/*` grants listing `cubbyhole/`.
  const p = policyPath(caller, namespace, path) + (operation === 'list' && !path.endsWith('/') ? '/' : '');
  const ok = CAPABILITY[operation].some((c) => caller.allows(p, c));
  if (!ok || (sudo && !caller.allows(p, 'sudo'))) throw new PermissionDenied();
}


/** Warnings about the request itself join the reply's; a 204 with warnings becomes a 200, as in Vault. */
function withWarnings(reply: Reply, warnings: readonly string[]): Reply {
  if (warnings.length === 0) return reply;
  if (reply.kind === 'none') return { kind: 'envelope', data: null, warnings: [...warnings] };
  if (reply.kind === 'envelope') return { ...reply, warnings: [...(reply.warnings ?? []), ...warnings] };
  return reply;
}

async function render(services: Services, req: ApiRequest, fullPath: string, reply: Reply): Promise<Dispatched> {
  switch (reply.kind) {
    case 'none':
      return { status: 204, body: undefined };
    case 'stream':
      return { status: 200, body: undefined, contentType: reply.contentType, stream: reply.open };
    case 'bare':
      return reply.contentType === undefined ? { status: reply.status, body: reply.body } : { status: reply.status, body: reply.body, contentType: reply.contentType };
    case 'envelope': {
      if (reply.status !== undefined) return { status: reply.status, body: envelope(req.id, reply) };
      if (req.wrapTTL !== undefined && req.wrapTTL > 0 && (reply.data !== null || reply.auth)) {
        const wrapInfo = await services.wrap({ data: reply.data, auth: reply.auth ?? null }, req.wrapTTL, fullPath);
        return { status: 200, body: envelope(req.id, { kind: 'envelope', data: null, wrapInfo }) };
      }
      if (req.operation === 'list' && emptyList(reply)) throw new NotFound();
      return { status: 200, body: injectedEnvelope(req.id, reply, fullPath) };
    }
  }
}

/**
 * findRoute over only the routes whose first segment can match `path`'s (equal, or a parameter):
 * the same first match, without splitting every pattern for every secret path (about 3% of the
 * event loop under KV write load, where no route matches at all).
 */
export function matchRoute(routes: readonly Route[], path: string): Match | undefined {
  const slash = path.indexOf('/');
  const first = slash === -1 ? path : path.slice(0, slash);
  const index = routeIndex(routes);
  const candidates = index.byFirst.get(first) ?? index.open;
  return candidates.length === 0 ? undefined : findRoute(candidates, path);
}

/**
 * The routes by their pattern's first segment, each list in declaration order with the routes
 * whose first segment is a parameter (`open`) merged in at their places: what the filter of every
 * route by first segment gave, built once per routes array instead of once per request.
 */
interface RouteIndex {
  readonly byFirst: ReadonlyMap<string, readonly Route[]>;
  readonly open: readonly Route[];
}

const indexes = new WeakMap<readonly Route[], RouteIndex>();

function routeIndex(routes: readonly Route[]): RouteIndex {
  let index = indexes.get(routes);
  if (index !== undefined) return index;
  const firstOf = (r: Route): string => r.pattern.split('/')[0] ?? '';
  const isOpen = (r: Route): boolean => r.pattern.startsWith(':') || r.pattern.startsWith('*');
  const byFirst = new Map<string, Route[]>();
  for (const r of routes) if (!isOpen(r) && !byFirst.has(firstOf(r))) byFirst.set(firstOf(r), []);
  for (const r of routes) {
    if (isOpen(r)) for (const list of byFirst.values()) list.push(r);
    else byFirst.get(firstOf(r))?.push(r);
  }
  index = { byFirst, open: routes.filter(isOpen) };
  indexes.set(routes, index);
  return index;
}

/**
 * Who authorized a request. `client`: the client's token, checked here. `forwarded`: a
 * performance secondary that authorized the request with its own tokens and ACL and forwarded it
 * over the mTLS cluster channel (REPLICATION.md 8); only namespace routes that a token would
 * authorize, and mounted engines, run that way (never public, body-authorized or node routes:
 * logins, unwrap, seal, replication; nor routes on this node's own tokens).
 */
export type Authority = { readonly kind: 'client' } | { readonly kind: 'forwarded'; readonly secondaryId: string; readonly scope: ForwardScope };

const CLIENT: Authority = { kind: 'client' };

export async function dispatch(services: Services, routes: readonly Route[], req: ApiRequest): Promise<Dispatched> {
  // A performance secondary answers from data it has applied and made visible, never from caches
  // a reload is still bringing up to date (a mount that status already counts would 404).
  const pending = services.visible?.();
  if (pending) await pending;
  const { reply, path } = await resolve(services, routes, req, CLIENT);
  return render(services, req, path, reply);
}

/** A forwarded write, run on the primary: its reply before rendering (the secondary renders it). */
export async function dispatchForwarded(services: Services, routes: readonly Route[], req: ApiRequest, secondaryId: string, scope: ForwardScope): Promise<Reply> {
  return (await resolve(services, routes, req, { kind: 'forwarded', secondaryId, scope })).reply;
}

const trimSlashes = (p: string): string => p.replace(/^\/+|\/+$/g, '');

/** A namespace a forwarding secondary does not hold does not exist for it (404). */
function namespaceInScope(scope: ForwardScope, namespace: string): void {
  if (!scope.namespace(namespace)) throw new NotFound([`namespace "${namespace.slice(0, 128)}" does not exist`]);
}

/**
 * A forwarding secondary is held to its paths filter (REPLICATION.md 8): a namespace or mount it
 * does not hold does not exist for it (404), whether the request writes in it (a mounted engine,
 * an auth method's configuration) or acts on it (sys/mounts, sys/auth, sys/namespaces).
 */
function inScope(scope: ForwardScope, namespace: string, path: string, declared: Match | undefined): void {
  namespaceInScope(scope, namespace);
  const named = declared ? declared.route.names?.(declared.params) : { mount: path };
  if (named === undefined) return;
  if ('namespace' in named) {
    namespaceInScope(scope, `${namespace}${trimSlashes(named.namespace)}/`);
  } else if (!scope.mount(namespace + trimSlashes(named.mount))) {
    throw new NotFound([`no handler for route "${path.slice(0, 128)}". route entry not found.`]);
  }
}

async function resolve(services: Services, routes: readonly Route[], req: ApiRequest, authority: Authority): Promise<{ reply: Reply; path: string }> {
  const match = matchRoute(routes, req.path);
  const drSecondary = services.drSecondary();
  const forwarded = authority.kind === 'forwarded';

  // Gates that do not need the barrier come first: a sealed DR secondary must still say 400/503 correctly.
  if (drSecondary && !match?.route.drSecondary) throw new DrSecondaryPathDisabled();
  // Wrapping stores a token: a DR secondary stores only what its primary sends (its Merkle root would diverge).
  if (drSecondary && req.wrapTTL !== undefined && req.wrapTTL > 0) throw new InvalidRequest('response wrapping is not available on a DR secondary');
  if (!match?.route.whileSealed) {
    if (!(await services.initialized())) throw new NotInitialized();
    if (services.sealed()) throw new Sealed();
  }

  // A namespace given by header that a forwarding secondary does not hold, existing here or not.
  if (authority.kind === 'forwarded') namespaceInScope(authority.scope, req.namespace);
  // Node-wide routes never resolve a path prefix: they exist only at the root, so a
  // namespace given by header refuses them here, and one given by prefix below.
  const { namespace, path } = match?.route.scope === 'node' || match?.route.whileSealed
    ? { namespace: req.namespace, path: req.path }
    : services.resolveNamespace(req.namespace, req.path);
  const declared = namespace === req.namespace ? match : matchRoute(routes, path);
  if (authority.kind === 'forwarded') inScope(authority.scope, namespace, path, declared);
  const routed = declared?.route.delegate ? await declared.route.delegate(namespace, path) : declared;

  // Path help (Vault's `?help=1`, http/help.go): the route's declaration or the mounted engine's
  // help, whatever the operation. As in Vault, it needs a valid token of the namespace (or a
  // parent's) but no capability: Vault's ACL allows the help operation on every path, sudo ones
  // too (policy/acl.go AllowOperation). Vault's unauthenticated paths (login paths, health, seal
  // status, unseal, DR secondary operations) answer it without a token (request_handling.go
  // handleLoginRequest): here the routes no client token authorizes, `public` and `body`. A node
  // route still answers only in the root namespace. Never forwarded: it writes nothing.
  if (!forwarded && wantsHelp(req.query)) {
    if (routed?.route.scope === 'node' && namespace !== '') throw new RootNamespaceOnly(routed.route.pattern.split('/:')[0] ?? routed.route.pattern);
    if (services.sealed()) throw new Sealed();
    if (routed?.route.access !== 'public' && routed?.route.access !== 'body') {
      await services.authenticate(req.token, namespace, (c) => {
        if (!namespace.startsWith(c.namespace)) throw new PermissionDenied();
      });
    }
    const system = path === 'sys' || path.startsWith('sys/') || path.startsWith('auth/');
    const help = routed ? routeHelp(routed.route) : system ? undefined : await services.engineHelp(namespace, path);
    if (help === undefined) throw new NotFound([system ? `unsupported path: ${path.slice(0, 128)}` : `no handler for route "${path.slice(0, 128)}". route entry not found.`]);
    return { reply: bare(200, helpBody(path, help)), path };
  }

  if (routed) {
    const { route, params } = routed;
    // Before authentication: a namespace token asking for the node spends nothing.
    if (route.scope === 'node' && namespace !== '') throw new RootNamespaceOnly(route.pattern.split('/:')[0] ?? route.pattern);
    const spec = route.operations[req.operation];
    if (!spec) throw new UnsupportedOperation(`unsupported operation ${req.method} on ${req.path}`);
    const tokenRoute = (route.access === 'token' || route.access === 'sudo') && route.scope !== 'node';
    if (forwarded && (!tokenRoute || route.localState)) throw new PermissionDenied(`${route.pattern} is not executed for a forwarding secondary`);
    let caller: Caller | undefined;
    if (!forwarded && (route.access === 'token' || route.access === 'sudo')) {
      const sudo = route.access === 'sudo';
      caller = await deniedAudited(services.auditTrail, { req, namespace, path }, () => services.authenticate(req.token, namespace, (c) => authorize(c, namespace, path, req.operation, sudo)));
    }
    if (route.license) services.requireLicense(route.license.feature, route.license.hostedOk === true);
    const query = req.operation === 'read' || req.operation === 'list';
    const { data, warnings } = parseFields(spec.fields, query ? req.query : req.body, { warnUnknown: !query });
    const run = async (): Promise<Reply> => withWarnings(await spec.handler({ req, params, fields: data, caller, namespace }), warnings);
    // Only what a client token authorized here may go on to the primary.
    const go = (): Promise<Reply> => (tokenRoute && !forwarded ? forwardable(services, req, run) : run());
    // Status reads no token authorizes (health, seal status, leader, replication status) are not audited, as in Vault.
    const unaudited = route.whileSealed === true || (route.access === 'public' && (req.operation === 'read' || req.operation === 'list'));
    const trail = unaudited ? undefined : services.auditTrail;
    return { reply: await audited(trail, { req, namespace, path, caller, ...(forwarded ? { forwardedFrom: authority.secondaryId } : {}) }, go), path };
  }

  if (path === 'sys' || path.startsWith('sys/') || path.startsWith('auth/')) throw new NotFound([`unsupported path: ${path.slice(0, 128)}`]);
  const caller = forwarded ? undefined : await deniedAudited(services.auditTrail, { req, namespace, path }, () => services.authenticate(req.token, namespace, (c) => authorize(c, namespace, path, req.operation, false)));
  // Without `list` (the ?list=true flag), by rest copy: `delete` would leave a slow dictionary-mode object.
  const { list: _list, ...data }: Record<string, unknown> = req.operation === 'read' || req.operation === 'list' ? req.query : req.body;
  const run = async (): Promise<Reply> => {
    try {
      const served = await services.logical(namespace, path, req.operation, data);
      if (!served) throw new NotFound([`no handler for route "${path.slice(0, 128)}". route entry not found.`]);
      if (served.response === null) return { kind: 'none' };
      return { kind: 'envelope', data: served.response.data ?? null, ...(served.response.warnings ? { warnings: served.response.warnings } : {}) };
    } catch (e) {
      // Vault's RespondWithStatusCode: a 404 that still answers its data (a deleted KV version).
      if (e instanceof NotFoundWithData) return { kind: 'envelope', data: e.data, status: 404 };
      if (e instanceof InvalidRequestWithData) return { kind: 'envelope', data: e.data, status: 400 };
      throw e;
    }
  };
  const go = (): Promise<Reply> => (forwarded ? run() : forwardable(services, req, run));
  return { reply: await audited(services.auditTrail, { req, namespace, path, caller, ...(forwarded ? { forwardedFrom: authority.secondaryId } : {}) }, go), path };
}

/**
 * The one decision point of write forwarding: a request this node authorized runs here; if it
 * reaches a write of a replicated key on a performance secondary (the storage engine refuses it
 * before anything is written, ReplicatedWriteRefused), it is forwarded to the primary instead, and
 * the primary's reply is answered once this node has applied the write. Which writes forward thus
 * follows the keyspace classes (non-local mounts, policies, mount and auth tables, namespaces, auth
 * method configuration), never a second list; local mounts and tokens commit here.
 */
async function forwardable(services: Services, req: ApiRequest, run: () => Promise<Reply>): Promise<Reply> {
  try {
    return await run();
  } catch (e) {
    if (!(e instanceof ReplicatedWriteRefused) || !services.forwardWrite) throw e;
    return replyOfForwarded(await services.forwardWrite(forwardRequestOf(req)));
  }
}
