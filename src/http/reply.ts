/**
 * What a route handler returns, and how it becomes Vault's wire shape.
 *
 *   return ok({ keys: [...] });          // 200 with the standard envelope
 *   return noContent();                  // 204
 *   return bare(200, { sealed: false }); // sys/init, seal-status, health, generate-* answer bare objects
 */
export type Reply =
  | { readonly kind: 'envelope'; readonly data: Record<string, unknown> | null; readonly warnings?: string[];
      readonly auth?: Record<string, unknown> | null; readonly wrapInfo?: Record<string, unknown> | null }
  | { readonly kind: 'none' }
  | { readonly kind: 'bare'; readonly status: number; readonly body: unknown; readonly contentType?: string };

export const ok = (data: Record<string, unknown> | null, extra: { warnings?: string[]; auth?: Record<string, unknown> } = {}): Reply => ({
  kind: 'envelope',
  data,
  ...extra,
});
export const noContent = (): Reply => ({ kind: 'none' });
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
