/**
 * fast-check generators of whole requests for the fuzz suite (fuzz.test.ts): every declared route
 * of a node (its pattern, each operation's HTTP methods, its field names) with path parameters
 * filled by random and edge values, the paths of the mounted engines (KV v2, userpass, approle),
 * unknown paths and methods, random tokens, namespaces, headers and bodies; plus every kind of
 * test/e2e/bad-input.arbitraries.ts (one set of bad-input generators, reused here, not copied).
 *
 *   const shapes = routeShapes(node.node.routes);
 *   fc.assert(fc.asyncProperty(fc.array(fuzzRequest(shapes, tokens)), async (batch) => { ... }));
 */
import fc from 'fast-check';
import { z } from 'zod';
import type { Route } from '../../src/http/route.js';
import type { Operation } from '../../src/vault/logical.js';
import { badRequest, notBool, notDuration, notInt, notString, notStringList, notStringMap, type Tokens } from '../e2e/bad-input.arbitraries.js';

/** Where a request goes, in a topology of a DR primary (also performance primary) and one secondary of each kind. */
export type Target = 'primary' | 'dr' | 'perf';

/**
 * Who the request claims to be. `root`, `limited` (a small policy) and `other-ns` (a token of
 * namespace ns1) are valid tokens of the target node; the rest never authenticate.
 */
export type TokenChoice = 'none' | 'root' | 'limited' | 'other-ns' | 'revoked' | { readonly literal: string };

export interface FuzzRequest {
  /** 'route', 'mounted', 'unknown' or `bad-input:<kind>`. */
  readonly kind: string;
  /** The declared (or mounted) pattern the path was generated from, for 'route' and 'mounted'. */
  readonly pattern?: string;
  readonly target: Target;
  readonly method: string;
  /** Sent verbatim (path and query), starting with '/'. */
  readonly path: string;
  readonly token: TokenChoice;
  readonly tokenHeader: 'x-vault-token' | 'bearer';
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /** Generated to be refused whatever the token (bad-input kinds): a 2xx is a defect. */
  readonly mustRefuse: boolean;
}

/** One declared route as the generator sees it. */
export interface RouteShape {
  readonly pattern: string;
  readonly methods: readonly string[];
  readonly fields: readonly string[];
}

const METHODS: Readonly<Record<Operation, readonly string[]>> = {
  read: ['GET'],
  list: ['LIST', 'GET?list=true'],
  create: ['POST', 'PUT'],
  update: ['POST', 'PUT'],
  delete: ['DELETE'],
  patch: ['PATCH'],
};

/** The generator's view of `routes` (a node's `routes`, src/node/routes.ts): patterns, methods and field names. */
export function routeShapes(routes: readonly Route[]): RouteShape[] {
  return routes.map((r) => {
    const ops = Object.entries(r.operations) as Array<[Operation, { fields: unknown } | undefined]>;
    const fields = new Set<string>();
    for (const [, spec] of ops) if (spec?.fields instanceof z.ZodObject) for (const k of Object.keys(spec.fields.shape)) fields.add(k);
    // A delegating route (auth/*path) declares no operations: the route it picks decides, so any method.
    const methods = ops.length === 0 ? ['GET', 'LIST', 'POST', 'PUT', 'DELETE', 'PATCH'] : [...new Set(ops.flatMap(([o]) => METHODS[o]))];
    return { pattern: r.pattern, methods, fields: [...fields] };
  });
}

/**
 * Paths served by mounted engines rather than declarations (secret/ is KV v2, transit/ transit;
 * userpass and approle are enabled by the suite), with every method: the engine decides what it
 * supports.
 */
const ANY = ['GET', 'LIST', 'POST', 'PUT', 'DELETE'];
const CRYPT = ['plaintext', 'ciphertext', 'context', 'key_version', 'batch_input', 'associated_data', 'type', 'convergent_encryption'];
const TRANSIT: readonly RouteShape[] = [
  { pattern: 'transit/keys/:k', methods: ANY, fields: ['type', 'derived', 'exportable', 'convergent_encryption', 'allow_plaintext_backup', 'auto_rotate_period', 'key_size', 'context'] },
  { pattern: 'transit/keys/:k/config', methods: ['POST', 'GET'], fields: ['min_decryption_version', 'min_encryption_version', 'deletion_allowed', 'exportable', 'auto_rotate_period'] },
  { pattern: 'transit/keys/:k/rotate', methods: ['POST'], fields: [] },
  { pattern: 'transit/keys/:k/trim', methods: ['POST'], fields: ['min_available_version'] },
  ...['encrypt', 'decrypt', 'rewrap'].map((op) => ({ pattern: `transit/${op}/:k`, methods: ['POST', 'PUT', 'GET'], fields: CRYPT })),
  { pattern: 'transit/datakey/:kind/:k', methods: ['POST'], fields: ['bits', 'context', 'key_version', 'nonce'] },
  { pattern: 'transit/hmac/:k', methods: ['POST'], fields: ['input', 'algorithm', 'key_version', 'batch_input'] },
  { pattern: 'transit/sign/:k', methods: ['POST'], fields: ['input', 'hash_algorithm', 'marshaling_algorithm', 'prehashed', 'signature_algorithm', 'salt_length', 'batch_input', 'context', 'key_version'] },
  { pattern: 'transit/verify/:k', methods: ['POST'], fields: ['input', 'signature', 'hmac', 'hash_algorithm', 'batch_input', 'context', 'marshaling_algorithm'] },
  { pattern: 'transit/hash/:alg', methods: ['POST'], fields: ['input', 'format', 'algorithm'] },
  { pattern: 'transit/random/:n', methods: ['POST'], fields: ['bytes', 'format'] },
  { pattern: 'transit/export/:t/:k', methods: ['GET'], fields: ['format'] },
  { pattern: 'transit/backup/:k', methods: ['GET'], fields: [] },
  { pattern: 'transit/restore/:k', methods: ['POST'], fields: ['backup', 'force'] },
  { pattern: 'transit/cache-config', methods: ['GET', 'POST'], fields: ['size'] },
];

export const MOUNTED: readonly RouteShape[] = [
  ...['data', 'metadata', 'delete', 'undelete', 'destroy', 'subkeys'].map((p) => ({ pattern: `secret/${p}/*key`, methods: ['GET', 'LIST', 'PUT', 'POST', 'PATCH', 'DELETE'], fields: ['data', 'options', 'versions', 'cas', 'max_versions', 'custom_metadata', 'delete_version_after'] })),
  { pattern: 'secret/config', methods: ['GET', 'POST'], fields: ['max_versions', 'cas_required', 'delete_version_after'] },
  { pattern: 'auth/userpass/users/:u', methods: ['GET', 'LIST', 'POST', 'DELETE'], fields: ['password', 'policies', 'token_policies', 'token_ttl'] },
  { pattern: 'auth/userpass/login/:u', methods: ['POST', 'PUT', 'GET'], fields: ['password'] },
  { pattern: 'auth/approle/role/:r', methods: ['GET', 'LIST', 'POST', 'DELETE'], fields: ['token_policies', 'secret_id_ttl', 'bind_secret_id'] },
  { pattern: 'auth/approle/role/:r/role-id', methods: ['GET', 'POST'], fields: ['role_id'] },
  { pattern: 'auth/approle/role/:r/secret-id', methods: ['POST', 'LIST'], fields: ['metadata'] },
  { pattern: 'auth/approle/role/:r/custom-secret-id', methods: ['POST'], fields: ['secret_id', 'metadata', 'ttl', 'num_uses', 'cidr_list'] },
  { pattern: 'auth/approle/role/:r/secret-id/lookup', methods: ['POST', 'GET'], fields: ['secret_id'] },
  { pattern: 'auth/approle/role/:r/secret-id/destroy', methods: ['POST', 'DELETE'], fields: ['secret_id'] },
  { pattern: 'auth/approle/role/:r/secret-id-accessor/lookup', methods: ['POST'], fields: ['secret_id_accessor'] },
  { pattern: 'auth/approle/role/:r/secret-id-accessor/destroy', methods: ['POST', 'DELETE'], fields: ['secret_id_accessor'] },
  { pattern: 'auth/approle/login', methods: ['POST'], fields: ['role_id', 'secret_id'] },
  ...TRANSIT,
];

/** Names the suite's fixtures use: hitting them on purpose finds more than random names do. */
export const FIXTURE_NAMES = ['secret', 'ns1', 'fuzz-limited', 'dr', 'perf', 'canary', 'token', 'userpass', 'approle', 'default', 'root'] as const;

const segment = fc.stringMatching(/^[a-z0-9_-]{1,12}$/);
const edgeSegment = fc.constantFrom('..', '.', '%2e%2e', '%2E', '%20', '%00', 'a%2Fb', '%ZZ', '%', 'é', '%C3%A9', '*', ':id', '+', 'a?b=c', '#x', 'x'.repeat(300), '\u{1F600}'.replace(/./gu, (c) => encodeURIComponent(c)));
const param = fc.oneof({ weight: 4, arbitrary: segment }, { weight: 3, arbitrary: fc.constantFrom(...FIXTURE_NAMES) }, { weight: 2, arbitrary: edgeSegment });
/** A `*rest` parameter: several segments, possibly empty ones. */
const rest = fc.oneof(param, fc.array(param, { minLength: 0, maxLength: 4 }).map((a) => a.join('/')));

/** `pattern` with its parameters filled. */
function fill(pattern: string): fc.Arbitrary<string> {
  const parts = pattern.split('/');
  return fc.tuple(...parts.map((p) => (p.startsWith(':') ? param : p.startsWith('*') ? rest : fc.constant(p)))).map((a) => a.join('/'));
}

/** Short positive durations are left out: a token or wrapping token that expires mid-run is revoked by the node's tidy, a legitimate change. */
const longOrBadDuration = fc.constantFrom<unknown>('1h', '768h', '87600h', '0', 0, '-5s', -1, 3600, 1e308, 'forever', '');
const safeString = fc.string({ maxLength: 12 }).filter((s) => !/^\s*[\d.+-]/.test(s));
const value: fc.Arbitrary<unknown> = fc.oneof(
  safeString,
  fc.constantFrom<unknown>(null, true, false, '', 0, -1, 1.5, 2 ** 53 + 1, 1e308, -1e308, Number.MAX_SAFE_INTEGER, 'x'.repeat(5000), [], {}, ['default'], { version: '2' }, { a: 'b' }),
  longOrBadDuration,
  notString,
  notInt,
  notDuration,
  notBool,
  notStringList,
  notStringMap,
  fc.jsonValue({ maxDepth: 3 }).filter((v) => typeof v !== 'string' || !/^\s*[\d.+-]/.test(v)),
);

/** An object over some of a route's own field names and some unknown ones. */
function fieldsBody(fields: readonly string[]): fc.Arbitrary<string> {
  const names = fields.length === 0 ? segment : fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...fields) }, { weight: 1, arbitrary: segment });
  return fc.dictionary(names, value, { maxKeys: 5 }).map((o) => JSON.stringify(o));
}

const nested = fc.tuple(fc.integer({ min: 1, max: 160 }), fc.boolean()).map(([d, arrays]) =>
  arrays ? `{"a":${'['.repeat(d)}${']'.repeat(d)}}` : `${'{"a":'.repeat(d)}1${'}'.repeat(d)}`,
);

function body(fields: readonly string[]): fc.Arbitrary<string | Buffer | undefined> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant('{}') },
    { weight: 8, arbitrary: fieldsBody(fields) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: nested },
    { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 80 }).map((a) => Buffer.from(a)) },
    { weight: 1, arbitrary: fc.constantFrom('null', '[]', '"s"', '1e999', '{"a":1,"a":2}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '\ufeff{}') },
  );
}

const contentType = fc.constantFrom<string | undefined>(undefined, undefined, 'application/json', 'application/json', 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream', 'garbage/;;');

const tokenChoice: fc.Arbitrary<TokenChoice> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom<TokenChoice>('none', 'root', 'root', 'root', 'limited', 'limited', 'other-ns', 'revoked') },
  { weight: 1, arbitrary: fc.oneof(fc.stringMatching(/^hvs\.[A-Za-z0-9]{24}$/), fc.string({ minLength: 1, maxLength: 30 }).map((s) => s.trim()).filter((s) => s !== '' && s !== 'root' && s !== 'none')).map((literal) => ({ literal })) },
);

/** X-Vault-Namespace values (undefined: no header). */
const namespaceHeader = fc.constantFrom<string | undefined>(...Array<undefined>(12).fill(undefined), 'ns1', 'ns1', 'ns1/', '/ns1/', 'ns1/child', 'nosuch', 'root', '/', '..', 'ns1/../x', '%2e%2e', 'a b', 'x'.repeat(200));
/** A namespace prefix on the path itself. */
const pathPrefix = fc.constantFrom(...Array<string>(12).fill(''), 'ns1/', 'ns1/', 'nosuch/', 'ns1/ns1/');

const wrapTtl = fc.constantFrom<string | undefined>(...Array<undefined>(20).fill(undefined), '1h', '1h', '30m', '0', '-1s', 'abc', '99999999999h', '');

const TARGETS = fc.constantFrom<Target>('primary', 'dr', 'perf');

/**
 * Valid tokens never reach endpoints that legitimately change what this suite checks (the seal,
 * the replication modes, the fixtures) or that take a node out of service: seal and step-down;
 * replication enable, disable, demote, promote, update-primary, revoke-secondary, reindex,
 * paths filters; generate-root and DR operation tokens; revoke-self; and writes or deletes on the
 * fixtures (the secret/ mount and its config, whose delete_version_after would expire the
 * canary, the canary secret, namespace ns1, the limited policy, the auth
 * mounts). Such requests are sent with a garbage token instead.
 */
export function destructive(method: string, path: string): boolean {
  const p = path.replace(/^\/v1\//, '').split('?')[0]!;
  if (/(^|\/)sys\/(seal|step-down)(\/|$)/.test(p)) return true;
  if (/sys\/replication\/(dr|performance)\/(primary|secondary)\/(enable|disable|demote|promote|update-primary|revoke-secondary|reindex|paths-filter)/.test(p)) return true;
  if (/sys\/replication\/reindex|generate-root|generate-operation-token|operation-token\/delete|auth\/token\/revoke-self/.test(p)) return true;
  const write = !['GET', 'LIST', 'HEAD', 'GET?list=true'].includes(method);
  return write && /sys\/(mounts\/secret|namespaces\/ns1|policies\/acl\/fuzz-limited|policy\/fuzz-limited|auth\/(userpass|approle|token))(\/|$)|secret\/([a-z]+\/canary|config)(\/|$)/.test(p);
}

function routeRequest(shapes: readonly RouteShape[], kind: string): fc.Arbitrary<FuzzRequest> {
  return fc
    .constantFrom(...shapes)
    .chain((s) =>
      fc.record({
        pattern: fc.constant(s.pattern),
        target: TARGETS,
        method: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...s.methods) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'LIST', 'HEAD', 'OPTIONS') }),
        path: fill(s.pattern),
        prefix: pathPrefix,
        query: fc.constantFrom(...Array<string>(16).fill(''), '?list=true', '?version=abc', '?version=1', '?a=%ZZ', '?standbyok=true&perfstandbyok=true', '?help=1'),
        token: tokenChoice,
        tokenHeader: fc.constantFrom('x-vault-token' as const, 'x-vault-token' as const, 'bearer' as const),
        namespace: namespaceHeader,
        contentType,
        wrapTtl,
        body: body(s.fields),
      }),
    )
    .map((r) => {
      const listVerb = r.method === 'GET?list=true';
      const method = listVerb ? 'GET' : r.method;
      const path = `/v1/${r.prefix}${r.path}${listVerb ? '?list=true' : r.query}`;
      const headers: Record<string, string> = {};
      if (r.namespace !== undefined) headers['X-Vault-Namespace'] = r.namespace;
      if (r.contentType !== undefined) headers['Content-Type'] = r.contentType;
      if (r.wrapTtl !== undefined) headers['X-Vault-Wrap-TTL'] = r.wrapTtl;
      const valid = r.token === 'root' || r.token === 'limited' || r.token === 'other-ns';
      const token: TokenChoice = valid && destructive(method, path) ? { literal: 'garbage-for-a-destructive-route' } : r.token;
      return { kind, pattern: r.pattern, target: r.target, method, path, token, tokenHeader: r.tokenHeader, headers, ...(r.body !== undefined ? { body: r.body } : {}), mustRefuse: false };
    });
}

const unknownPath: fc.Arbitrary<FuzzRequest> = fc
  .record({
    target: TARGETS,
    method: fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'LIST', 'HEAD', 'OPTIONS', 'PROPFIND', 'TRACE', 'PURGE'),
    path: fc.oneof(
      fc.array(fc.oneof(segment, edgeSegment), { minLength: 1, maxLength: 5 }).map((a) => `/v1/${a.join('/')}`),
      fc.array(segment, { minLength: 0, maxLength: 3 }).map((a) => `/v1/sys/${a.join('/')}`),
      fc.constantFrom('/', '/v1', '/v1/', '/v2/sys/health', '/ui', '/ui/../x', '/ui/nosuch.js', '/metrics', '/v1//', '/v1/sys//health', '//v1/sys/health', '/v1/sys/health/', '/v1/%'),
    ),
    token: tokenChoice,
    body: body([]),
  })
  .map((r) => ({ kind: 'unknown', target: r.target, method: r.method, path: r.path, token: r.token, tokenHeader: 'x-vault-token' as const, headers: {}, ...(r.body !== undefined ? { body: r.body } : {}), mustRefuse: false }));

/** The e2e bad-input kinds, sent to any node; their tokens are the suite's own. */
function badInput(tokens: Tokens): fc.Arbitrary<FuzzRequest> {
  return fc.tuple(badRequest(tokens), TARGETS).map(([r, target]): FuzzRequest => ({
    kind: `bad-input:${r.kind}`,
    target,
    method: r.method,
    path: r.path,
    token: r.token === 'root' ? 'root' : r.token === 'none' ? 'none' : { literal: r.token },
    tokenHeader: r.tokenHeader,
    headers: r.body !== undefined ? { 'Content-Type': 'application/json' } : ({} as Record<string, string>),
    ...(r.body !== undefined ? { body: r.body } : {}),
    // A known status there is a node with a canary at version 1 and secret/ KV v2: here "refused" is what holds on every node.
    mustRefuse: true,
  }));
}

/** Any request: declared routes (most), mounted engines, unknown paths and the bad-input kinds. */
export function fuzzRequest(shapes: readonly RouteShape[], tokens: Tokens): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    { weight: 10, arbitrary: routeRequest(shapes, 'route') },
    { weight: 3, arbitrary: routeRequest(MOUNTED, 'mounted') },
    { weight: 2, arbitrary: unknownPath },
    { weight: 2, arbitrary: badInput(tokens) },
  );
}
