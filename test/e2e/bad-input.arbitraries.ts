/**
 * fast-check generators of requests a node must refuse without changing state: malformed JSON,
 * wrong field types, unknown paths, empty path segments, bad tokens, unsupported methods. Every
 * generated request carries at least one field that is invalid on its own, so no combination of
 * the random noise around it can turn it into a valid write.
 *
 *   fc.assert(fc.asyncProperty(badRequest(tokens), async (r) => { ... }));
 */
import fc from 'fast-check';

export interface BadRequest {
  readonly kind: string;
  readonly method: string;
  /** Sent verbatim, starting with '/'. */
  readonly path: string;
  /** 'root', 'none' or a literal token; how it is sent is `tokenHeader`. */
  readonly token: string;
  readonly tokenHeader: 'x-vault-token' | 'bearer';
  readonly body?: string;
  /** The exact status the node must answer, when one is known; otherwise any 4xx. */
  readonly status?: number;
}

export interface Tokens {
  readonly revoked: string;
  readonly expired: string;
}

const ROOT = 'root';

export const notString = fc.oneof(fc.integer(), fc.boolean(), fc.constant([1]), fc.constant({ a: 1 }));
export const notInt = fc.constantFrom<unknown>('abc', 1.5, true, [], {}, '1x', '');
export const notDuration = fc.constantFrom<unknown>('abc', '10 parsecs', true, [], {}, 'h', '1hh');
export const notBool = fc.constantFrom<unknown>('maybe', 2, [], {}, 'yes', 'no');
export const notStringList = fc.constantFrom<unknown>(5, true, {}, [1], [null], [{}]);
export const notStringMap = fc.constantFrom<unknown>('x', 5, [1], { a: {} }, { a: [1] }, { a: null });
/** KV v2 `data`: also a string, but never one that holds a JSON object (the node accepts that). */
const notMap = fc.constantFrom<unknown>(5, true, [1], 'abc', '[1]', '"s"', 0);

/** Random extra fields under names no route knows; they must be ignored, never accepted as valid. */
const noise = fc.dictionary(fc.stringMatching(/^zz_[a-z]{1,6}$/), fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean()), { maxKeys: 3 });

const segment = fc.stringMatching(/^[a-z0-9]{1,10}$/);

function isBadJson(s: string): boolean {
  if (s.length === 0) return false; // an empty body is an empty object
  try {
    const v: unknown = JSON.parse(s);
    return v !== null && (typeof v !== 'object' || Array.isArray(v));
  } catch {
    return true;
  }
}

const writePath = fc.constantFrom(
  '/v1/secret/data/x',
  '/v1/secret/data/canary',
  '/v1/sys/mounts/junk',
  '/v1/auth/token/create',
  '/v1/sys/init',
  '/v1/sys/unseal',
  '/v1/sys/policies/acl/p1',
  '/v1/sys/wrapping/wrap',
  '/v1/sys/replication/reindex',
);

const malformedJson: fc.Arbitrary<BadRequest> = fc.record({
  kind: fc.constant('malformed-json'),
  method: fc.constantFrom('PUT', 'POST'),
  path: writePath,
  token: fc.constant(ROOT),
  tokenHeader: fc.constant('x-vault-token' as const),
  body: fc.oneof(
    fc.constantFrom('{', '{"a":', '[1,2]', '"str"', '42', 'true', '{"data": }', '\u0000', '{"data":{"a":1}', ' ', "{'a':1}"),
    fc.string({ maxLength: 40 }).filter(isBadJson),
  ),
  status: fc.constant(400),
});

const json = (o: unknown) => JSON.stringify(o);

const mountsWrongTypes: fc.Arbitrary<BadRequest> = fc
  .tuple(
    segment,
    noise,
    fc.oneof(
      fc.record({ type: fc.oneof(notString, fc.constant('')) }),
      fc.record({ type: fc.constant('kv'), options: notStringMap }),
      fc.record({ type: fc.constant('kv'), config: fc.record({ default_lease_ttl: notDuration }) }),
      fc.record({ type: fc.constant('kv'), local: notBool }),
      fc.record({ type: fc.constant('kv'), description: notString }),
    ),
  )
  .map(([name, extra, bad]) => ({ kind: 'mount-types', method: 'POST', path: `/v1/sys/mounts/${name}`, token: ROOT, tokenHeader: 'x-vault-token' as const, body: json({ ...extra, ...bad }), status: 400 }));

const tuneWrongTypes: fc.Arbitrary<BadRequest> = fc
  .tuple(
    noise,
    fc.oneof(
      fc.record({ default_lease_ttl: notDuration }),
      fc.record({ max_lease_ttl: notDuration }),
      fc.record({ description: notString }),
      fc.record({ options: notStringMap }),
    ),
  )
  .map(([extra, bad]) => ({ kind: 'tune-types', method: 'POST', path: '/v1/sys/mounts/secret/tune', token: ROOT, tokenHeader: 'x-vault-token' as const, body: json({ ...extra, ...bad }), status: 400 }));

const tokenCreateWrongTypes: fc.Arbitrary<BadRequest> = fc
  .tuple(
    fc.constantFrom('/v1/auth/token/create', '/v1/auth/token/create-orphan'),
    noise,
    fc.oneof(
      fc.record({ policies: notStringList }),
      fc.record({ ttl: notDuration }),
      fc.record({ explicit_max_ttl: notDuration }),
      fc.record({ num_uses: notInt }),
      fc.record({ display_name: notString }),
      fc.record({ meta: notStringMap }),
      fc.record({ no_parent: notBool }),
      fc.record({ no_default_policy: notBool }),
      fc.record({ id: notString }),
      fc.record({ renewable: notBool }),
    ),
  )
  .map(([path, extra, bad]) => ({ kind: 'token-create-types', method: 'POST', path, token: ROOT, tokenHeader: 'x-vault-token' as const, body: json({ ...extra, ...bad }), status: 400 }));

/** The node is initialised already, so even well-typed init bodies must be refused. */
const initBodies: fc.Arbitrary<BadRequest> = fc
  .oneof(
    fc.record({ secret_shares: notInt, secret_threshold: fc.integer({ min: 1, max: 3 }) }),
    fc.record({ secret_shares: fc.integer({ min: 1, max: 3 }), secret_threshold: notInt }),
    fc.record({ secret_shares: fc.integer({ min: 1, max: 5 }), secret_threshold: fc.constant(1) }),
  )
  .map((body) => ({ kind: 'init', method: 'PUT', path: '/v1/sys/init', token: 'none', tokenHeader: 'x-vault-token' as const, body: json(body), status: 400 }));

const kvWrongTypes: fc.Arbitrary<BadRequest> = fc
  .tuple(
    fc.constantFrom('x', 'canary', 'new/deeper'),
    fc.oneof(
      fc.record({ data: notMap }),
      fc.record({ data: fc.constant({ a: '1' }), options: fc.record({ cas: notInt }) }),
      fc.record({ data: fc.constant({ a: '1' }), options: fc.constantFrom<unknown>('x', 5, [1]) }),
    ),
    fc.constantFrom('PUT', 'POST'),
  )
  .map(([key, body, method]) => ({ kind: 'kv-types', method, path: `/v1/secret/data/${key}`, token: ROOT, tokenHeader: 'x-vault-token' as const, body: json(body), status: 400 }));

/** The canary is at version 1: any other cas must be refused (0 means "only if absent"). */
const kvCasMismatch: fc.Arbitrary<BadRequest> = fc
  .oneof(fc.constant(0), fc.integer({ min: 2, max: 1000 }))
  .map((cas) => ({ kind: 'kv-cas', method: 'PUT', path: '/v1/secret/data/canary', token: ROOT, tokenHeader: 'x-vault-token' as const, body: json({ data: { v: 'evil' }, options: { cas } }), status: 400 }));

const unknownPaths: fc.Arbitrary<BadRequest> = fc
  .tuple(
    fc.constantFrom('GET', 'PUT', 'POST', 'DELETE'),
    segment,
    segment,
    fc.constantFrom(
      (a: string, b: string) => `/v1/nosuch-${a}/${b}`,
      (a: string) => `/v1/sys/nosuch-${a}`,
      (a: string, b: string) => `/v1/auth/nosuch-${a}/${b}`,
      (a: string, b: string) => `/v1/sys/mounts-${a}/${b}`,
      (a: string) => `/v2/secret/data/${a}`,
      (a: string) => `/${a}`,
      () => '/v1/',
      () => '/v1',
      () => '/v1/secret/%ZZ',
      (a: string) => `/v1/${a}%`,
      (a: string) => `/v1/secret/data/${a}%E0%A4%A`,
    ),
  )
  .map(([method, a, b, make]) => ({
    kind: 'unknown-path',
    method,
    path: make(a, b),
    token: ROOT,
    tokenHeader: 'x-vault-token' as const,
    ...(method === 'PUT' || method === 'POST' ? { body: '{}' } : {}),
  }));

/** Empty segments: a node that collapsed them would write to the canary or mount "evil". */
const emptySegments: fc.Arbitrary<BadRequest> = fc
  .constantFrom(
    { method: 'PUT', path: '/v1//sys/mounts/evil', body: json({ type: 'kv' }) },
    { method: 'PUT', path: '/v1/sys//mounts/evil', body: json({ type: 'kv' }) },
    { method: 'PUT', path: '/v1/secret//data/canary', body: json({ data: { v: 'evil' } }) },
    { method: 'PUT', path: '/v1/secret/data//canary', body: json({ data: { v: 'evil' } }) },
    { method: 'DELETE', path: '/v1/secret/data//canary' },
    { method: 'DELETE', path: '/v1/sys/mounts//secret' },
    { method: 'PUT', path: '/v1/secret/data/canary%2F%2Fx', body: json({ data: { v: 'evil' } }) },
  )
  .map((r) => ({ kind: 'empty-segment', token: ROOT, tokenHeader: 'x-vault-token' as const, ...r, status: 400 }));

/** Requests that would change state or read secrets with a valid token; here the token is bad. */
const guarded = [
  { method: 'GET', path: '/v1/secret/data/canary' },
  { method: 'PUT', path: '/v1/secret/data/canary', body: json({ data: { v: 'evil' } }) },
  { method: 'DELETE', path: '/v1/secret/data/canary' },
  { method: 'DELETE', path: '/v1/secret/metadata/canary' },
  { method: 'GET', path: '/v1/secret/metadata/?list=true' },
  { method: 'LIST', path: '/v1/secret/metadata/' },
  { method: 'POST', path: '/v1/auth/token/create', body: '{}' },
  { method: 'GET', path: '/v1/auth/token/lookup-self' },
  { method: 'GET', path: '/v1/sys/mounts' },
  { method: 'PUT', path: '/v1/sys/mounts/evil', body: json({ type: 'kv' }) },
  { method: 'DELETE', path: '/v1/sys/mounts/secret' },
  { method: 'PUT', path: '/v1/sys/policies/acl/evil', body: json({ policy: 'path "*" { capabilities = ["sudo"] }' }) },
  { method: 'POST', path: '/v1/sys/replication/merkle-check', body: '{}' },
] as const;

function badTokens(tokens: Tokens): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(tokens.revoked),
    fc.constant(tokens.expired),
    fc.constant('none'),
    fc.stringMatching(/^hvs\.[A-Za-z0-9]{24}$/),
    // Printable ASCII without surrounding spaces (HTTP trims those), never the word 'root'.
    fc.string({ minLength: 1, maxLength: 40 }).map((s) => s.trim()).filter((s) => s !== '' && s !== ROOT && s !== 'none'),
  );
}

function badToken(tokens: Tokens): fc.Arbitrary<BadRequest> {
  return fc
    .tuple(fc.constantFrom(...guarded), badTokens(tokens), fc.constantFrom('x-vault-token' as const, 'bearer' as const))
    .map(([r, token, tokenHeader]) => ({ kind: 'bad-token', ...r, token, tokenHeader, status: 403 }));
}

/** Methods Node's parser accepts that Vault's wire has no meaning for, and known methods on routes without them. */
const unsupportedMethods: fc.Arbitrary<BadRequest> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom('OPTIONS', 'TRACE', 'PROPFIND', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'MKCOL', 'SEARCH', 'PURGE', 'REPORT', 'LINK'),
      fc.constantFrom('/v1/secret/data/canary', '/v1/sys/mounts', '/v1/sys/health', '/v1/auth/token/create'),
    )
    .map(([method, path]) => ({ kind: 'method', method, path, token: ROOT, tokenHeader: 'x-vault-token' as const, status: 405 })),
  fc
    .constantFrom(
      { method: 'DELETE', path: '/v1/sys/health' },
      { method: 'DELETE', path: '/v1/sys/init' },
      { method: 'PATCH', path: '/v1/sys/mounts', body: '{}' },
      { method: 'GET', path: '/v1/sys/replication/merkle-check' },
      { method: 'PUT', path: '/v1/sys/replication/status', body: '{}' },
      { method: 'DELETE', path: '/v1/auth/token/create' },
      { method: 'GET', path: '/v1/sys/wrapping/unwrap' },
    )
    .map((r) => ({ kind: 'method-on-route', ...r, token: ROOT, tokenHeader: 'x-vault-token' as const, status: 405 })),
);

export function badRequest(tokens: Tokens): fc.Arbitrary<BadRequest> {
  return fc.oneof(
    malformedJson,
    mountsWrongTypes,
    tuneWrongTypes,
    tokenCreateWrongTypes,
    initBodies,
    kvWrongTypes,
    kvCasMismatch,
    unknownPaths,
    emptySegments,
    badToken(tokens),
    unsupportedMethods,
  );
}
