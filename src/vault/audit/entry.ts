/**
 * The JSON lines an audit device writes, in Vault's shape (audit/format.go): a `request` entry
 * before the operation runs and a `response` entry after it, each with `time`, `type`, `auth`,
 * `request` and `error`, the response entry with `response` too. Unless `raw`, every string of the
 * request's and the response's data, the client token and (with `hmacAccessor`) the accessors are
 * `hmac-sha256:` of the device's salt (hash.ts); map keys, numbers and booleans stay clear.
 *
 *   const line = JSON.stringify(requestEntry(input, { salt, raw: false, hmacAccessor: true }, new Date()));
 */
import { hashString, hashValues } from './hash.js';

/** Who called, as the token check saw it (absent for requests no token authorized: logins, unwrap). */
export interface AuditAuth {
  readonly clientToken: string;
  readonly accessor: string;
  readonly displayName: string;
  readonly policies: readonly string[];
  readonly metadata: Readonly<Record<string, string>> | null;
  readonly tokenType: string;
  readonly ttl: number;
  /** Unix seconds. */
  readonly issueTime: number;
  /** Uses left after this one; 0 for an unlimited token. */
  readonly remainingUses: number;
  /** SHA-256 of the client token (its stored key): names the token's hash in the memo below without the token. */
  readonly tokenHash?: string;
}

/** One request as the audit trail names it. */
export interface AuditInput {
  readonly id: string;
  readonly operation: string;
  /** Namespace-relative, as the policies see it. */
  readonly path: string;
  /** '' for the root namespace, else `a/b/`. */
  readonly namespace: string;
  readonly data: Readonly<Record<string, unknown>>;
  readonly remoteAddress: string;
  /** The token the client sent, '' when none. */
  readonly clientToken: string;
  readonly auth: AuditAuth | undefined;
  /** The mounted engine that serves the path, when one does. */
  readonly mount: { readonly type: string; readonly point: string; readonly accessor: string } | undefined;
  /** A performance secondary's id when it forwarded the request. */
  readonly forwardedFrom?: string;
}

/** What the operation answered, or its error. */
export interface AuditOutcome {
  readonly data?: Record<string, unknown> | null;
  readonly auth?: Record<string, unknown> | null;
  readonly warnings?: readonly string[];
  readonly error?: string;
}

export interface FormatOptions {
  readonly salt: string;
  /** `log_raw`: nothing hashed. */
  readonly raw: boolean;
  /** `hmac_accessor`: accessors hashed too (Vault's default). */
  readonly hmacAccessor: boolean;
}

type Hasher = { readonly str: (s: string) => string; readonly acc: (s: string) => string; readonly data: (v: unknown) => unknown };

/**
 * Hashes of one request's strings under one salt: its request and response entries name the
 * client token and the accessor four times each, so each is hashed once. Lives as long as the
 * request's AuditInput.
 */
const memos = new WeakMap<AuditInput, Map<string, Map<string, string>>>();

function memoOf(i: AuditInput, salt: string): Map<string, string> {
  let bySalt = memos.get(i);
  if (bySalt === undefined) memos.set(i, (bySalt = new Map()));
  let memo = bySalt.get(salt);
  if (memo === undefined) bySalt.set(salt, (memo = new Map()));
  return memo;
}

/**
 * The caller's token and accessor hashed under a salt, across requests: the token keyed by its
 * SHA-256 (never by the token itself), the accessor by itself (stored in the clear as an index key
 * already); bounded, oldest first out. A caller seen again is not hashed again.
 */
const callerMemo = new Map<string, string>();
const CALLER_MEMO_MAX = 4096;

function remembered(key: string, hash: () => string): string {
  let h = callerMemo.get(key);
  if (h === undefined) {
    h = hash();
    if (callerMemo.size >= CALLER_MEMO_MAX) callerMemo.delete(callerMemo.keys().next().value as string);
    callerMemo.set(key, h);
  }
  return h;
}

function hasher(o: FormatOptions, i: AuditInput): Hasher {
  if (o.raw) return { str: (s) => s, acc: (s) => s, data: (v) => v };
  const memo = memoOf(i, o.salt);
  const str = (s: string): string => {
    if (s === '') return s;
    let h = memo.get(s);
    if (h === undefined) memo.set(s, (h = hashString(o.salt, s)));
    return h;
  };
  // The caller's token and accessor, hashed once across requests; every other mention hits `memo`.
  const a = i.auth;
  if (a !== undefined && a.clientToken !== '' && a.tokenHash !== undefined && !memo.has(a.clientToken)) {
    memo.set(a.clientToken, remembered(`${o.salt}\0t\0${a.tokenHash}`, () => hashString(o.salt, a.clientToken)));
  }
  if (a !== undefined && a.accessor !== '' && !memo.has(a.accessor)) {
    memo.set(a.accessor, remembered(`${o.salt}\0a\0${a.accessor}`, () => hashString(o.salt, a.accessor)));
  }
  return { str, acc: o.hmacAccessor ? str : (s) => s, data: (v) => hashValues(o.salt, v) };
}

function authBlock(a: AuditAuth | undefined, h: Hasher): Record<string, unknown> {
  if (a === undefined) return { token_type: 'default' };
  return {
    client_token: h.str(a.clientToken),
    accessor: h.acc(a.accessor),
    display_name: a.displayName,
    policies: [...a.policies],
    token_policies: [...a.policies],
    ...(a.metadata !== null && Object.keys(a.metadata).length > 0 ? { metadata: { ...a.metadata } } : {}),
    entity_id: '',
    ...(a.remainingUses > 0 ? { remaining_uses: a.remainingUses } : {}),
    token_type: a.tokenType,
    token_ttl: a.ttl,
    token_issue_time: new Date(a.issueTime * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
}

function requestBlock(i: AuditInput, h: Hasher): Record<string, unknown> {
  const ns = i.namespace === '' ? { id: 'root', path: '' } : { id: i.namespace.replace(/\/$/, ''), path: i.namespace };
  return {
    id: i.id,
    operation: i.operation,
    ...(i.mount ? { mount_point: i.mount.point, mount_type: i.mount.type, mount_accessor: i.mount.accessor } : {}),
    ...(i.clientToken !== '' ? { client_token: h.str(i.clientToken) } : {}),
    ...(i.auth ? { client_token_accessor: h.acc(i.auth.accessor) } : {}),
    namespace: ns,
    path: i.path,
    ...(Object.keys(i.data).length > 0 ? { data: h.data(i.data) } : {}),
    remote_address: i.remoteAddress,
    ...(i.forwardedFrom !== undefined ? { forwarded_from: i.forwardedFrom } : {}),
  };
}

/** `error`: why the request was refused before it ran (a denied token), '' otherwise. */
export function requestEntry(i: AuditInput, o: FormatOptions, now: Date, error = ''): Record<string, unknown> {
  const h = hasher(o, i);
  return { time: now.toISOString(), type: 'request', auth: authBlock(i.auth, h), request: requestBlock(i, h), error };
}

/** The `auth` a response carries (a login's new token): its token and accessor hashed, as Vault's HashAuth. */
function responseAuth(a: Record<string, unknown>, h: Hasher): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  if (typeof a.client_token === 'string') out.client_token = h.str(a.client_token);
  if (typeof a.accessor === 'string') out.accessor = h.acc(a.accessor);
  return out;
}

export function responseEntry(i: AuditInput, r: AuditOutcome, o: FormatOptions, now: Date): Record<string, unknown> {
  const h = hasher(o, i);
  const response: Record<string, unknown> = {
    ...(i.mount ? { mount_point: i.mount.point, mount_type: i.mount.type, mount_accessor: i.mount.accessor } : {}),
    ...(r.auth ? { auth: responseAuth(r.auth, h) } : {}),
    ...(r.data ? { data: h.data(r.data) } : {}),
    ...(r.warnings && r.warnings.length > 0 ? { warnings: [...r.warnings] } : {}),
  };
  return {
    time: now.toISOString(),
    type: 'response',
    auth: authBlock(i.auth, h),
    request: requestBlock(i, h),
    response,
    error: r.error ?? '',
  };
}
