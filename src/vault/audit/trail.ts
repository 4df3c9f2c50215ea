/**
 * What the request path (src/http/dispatch.ts) audits through: whether any device is enabled, the
 * request and response entries (each an AuditFailed when no device wrote it), and the mount that
 * serves a path, for the entries' `mount_type`.
 *
 *   if (trail.enabled()) await trail.logRequest(input);
 */
import type { AuditInput, AuditOutcome } from './entry.js';

export interface AuditTrail {
  enabled(): boolean;
  /** `error`: the request was refused before it ran (a denied token), and why. */
  logRequest(input: AuditInput, error?: string): Promise<void>;
  logResponse(input: AuditInput, outcome: AuditOutcome): Promise<void>;
  mountOf(namespace: string, path: string): { readonly type: string; readonly point: string; readonly accessor: string } | undefined;
}
