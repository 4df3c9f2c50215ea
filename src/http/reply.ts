/**
 * What a route handler returns, and how it becomes Vault's wire shape.
 *
 *   return ok({ keys: [...] });          // 200 with the standard envelope (a LIST of no keys: 404)
 *   return ok({ error: 'no such accessor' }, { status: 404 }); // the envelope with another status
 *   return noContent();                  // 204
 *   return bare(200, { sealed: false }); // sys/init, seal-status, health, generate-* answer bare objects
 *   return streamed('text/event-stream', (signal) => lines(signal)); // stays open until the source ends or the client leaves
 */
export type Reply =
  | { readonly kind: 'envelope'; readonly data: Record<string, unknown> | null; readonly warnings?: string[];
      readonly auth?: Record<string, unknown> | null; readonly wrapInfo?: Record<string, unknown> | null;
      /** Vault's RespondWithStatusCode: the envelope with this status (never wrapped) instead of 200. */
      readonly status?: number }
  | { readonly kind: 'none' }
  | { readonly kind: 'bare'; readonly status: number; readonly body: unknown; readonly contentType?: string }
  | { readonly kind: 'stream'; readonly contentType: string; readonly open: StreamSource };

/**
 * A reply written as it is produced (server-sent events): 200 with `contentType`, no length, each
 * chunk written as the source yields it. `signal` aborts when the client goes away (or the
 * listener closes); the source must then end promptly, and release what it holds.
 */
export type StreamSource = (signal: AbortSignal) => AsyncIterable<string>;

export const ok = (data: Record<string, unknown> | null, extra: { warnings?: string[]; auth?: Record<string, unknown>; status?: number } = {}): Reply => ({
  kind: 'envelope',
  data,
  ...extra,
});
export const noContent = (): Reply => ({ kind: 'none' });
export const streamed = (contentType: string, open: StreamSource): Reply => ({ kind: 'stream', contentType, open });
export const bare = (status: number, body: unknown, contentType?: string): Reply =>
  contentType === undefined ? { kind: 'bare', status, body } : { kind: 'bare', status, body, contentType };

/** Vault's success envelope: every key present, empty ones null. */
export function envelope(requestId: string, r: Extract<Reply, { kind: 'envelope' }>): Record<string, unknown> {
  return {
    request_id: requestId,
    lease_id: '',
    renewable: false,
    lease_duration: 0,
    data: r.data,
    wrap_info: r.wrapInfo ?? null,
    warnings: r.warnings && r.warnings.length > 0 ? r.warnings : null,
    auth: r.auth ?? null,
    mount_type: '',
  };
}

/**
 * The system paths whose answer repeats its `data` at the top level of the body, before the
 * envelope's own keys (Vault's http/handler.go injectDataIntoTopRoutes and logical.HTTPSysInjector):
 * old clients read a policy list's `keys` there. Exact paths, and prefixes ending in `/`.
 */
const INJECT_EXACT: ReadonlySet<string> = new Set([
  'sys/audit', 'sys/auth', 'sys/config/cors', 'sys/config/auditing/request-headers', 'sys/capabilities',
  'sys/capabilities-accessor', 'sys/capabilities-self', 'sys/ha-status', 'sys/key-status', 'sys/mounts', 'sys/policy',
  'sys/rekey/backup', 'sys/rekey/recovery-key-backup', 'sys/remount', 'sys/rotate', 'sys/wrapping/wrap',
]);
const INJECT_PREFIXES = ['sys/audit/', 'sys/audit-hash/', 'sys/auth/', 'sys/config/auditing/request-headers/', 'sys/mounts/', 'sys/policy/'];

/** Whether an answer at this (namespace-relative) path repeats its data at the top level. */
export function injectsData(path: string): boolean {
  return INJECT_EXACT.has(path) || INJECT_PREFIXES.some((p) => path.startsWith(p));
}

/** The envelope, with the data's keys first where `injectsData`: the envelope's keys win a clash, as Go's JSON decoding of Vault's body keeps the last. */
export function injectedEnvelope(requestId: string, r: Extract<Reply, { kind: 'envelope' }>, path: string): Record<string, unknown> {
  const body = envelope(requestId, r);
  return injectsData(path) && r.data ? { ...r.data, ...body } : body;
}

/**
 * Vault's rule for a LIST answer (sdk/logical/response_util.go RespondErrorCommon): 404 with no
 * message when it has no keys, unless wrapped or it carries other data or warnings instead. One
 * rule for every LIST, routes and mounted engines alike.
 */
export function emptyList(r: Extract<Reply, { kind: 'envelope' }>): boolean {
  if (r.wrapInfo) return false;
  const data = r.data ?? {};
  const warned = (r.warnings?.length ?? 0) > 0;
  if (Object.keys(data).length === 0) return !warned;
  const keys = data.keys;
  if (keys === undefined || keys === null) return false;
  return Array.isArray(keys) && keys.length === 0;
}
