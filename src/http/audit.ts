/**
 * The audit step of a request's way through the node (dispatch.ts): with a device enabled, the
 * request entry is written before the operation runs (none written: AuditFailed, nothing done) and
 * the response entry after it (none written: AuditFailed saying the operation was applied). A
 * failed operation's response entry is best effort; its own error is the answer.
 *
 *   const reply = await audited(services.auditTrail, { req, namespace, path, caller }, run);
 */
import { PermissionDenied } from '../core/errors.js';
import type { Caller } from '../vault/caller.js';
import type { AuditAuth, AuditInput, AuditOutcome } from '../vault/audit/entry.js';
import type { AuditTrail } from '../vault/audit/trail.js';
import type { ApiRequest } from './request.js';
import type { Reply } from './reply.js';

export interface AuditedRequest {
  readonly req: ApiRequest;
  readonly namespace: string;
  readonly path: string;
  readonly caller: Caller | undefined;
  /** The performance secondary that forwarded it, when one did. */
  readonly forwardedFrom?: string;
}

function authOf(c: Caller): AuditAuth {
  const e = c.entry;
  return {
    clientToken: c.token,
    accessor: c.accessor,
    displayName: e.display_name,
    policies: e.policies,
    metadata: e.meta,
    tokenType: e.type,
    ttl: e.ttl,
    issueTime: e.creation_time,
    remainingUses: Math.max(0, e.num_uses),
    tokenHash: e.hash,
  };
}

function inputOf(trail: AuditTrail, a: AuditedRequest): AuditInput {
  const { req } = a;
  const raw: unknown = req.operation === 'read' || req.operation === 'list' ? req.query : req.body;
  const data = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  return {
    id: req.id,
    operation: req.operation,
    path: a.path,
    namespace: a.namespace,
    data,
    remoteAddress: req.remoteAddress,
    clientToken: req.token ?? '',
    auth: a.caller ? authOf(a.caller) : undefined,
    mount: trail.mountOf(a.namespace, a.path),
    ...(a.forwardedFrom !== undefined ? { forwardedFrom: a.forwardedFrom } : {}),
  };
}

function outcomeOf(reply: Reply): AuditOutcome {
  if (reply.kind === 'bare' && reply.body !== null && typeof reply.body === 'object' && !Array.isArray(reply.body)) return { data: reply.body as Record<string, unknown> };
  if (reply.kind !== 'envelope') return {};
  return {
    data: reply.data,
    ...(reply.auth ? { auth: reply.auth as Record<string, unknown> } : {}),
    ...(reply.warnings ? { warnings: reply.warnings } : {}),
  };
}

/**
 * Runs the token check; a refused one leaves a request entry with its error, as Vault's
 * (request_handling.go: a denied request is audited, and one no device could record is a 500).
 */
export async function deniedAudited<T>(trail: AuditTrail | undefined, a: Omit<AuditedRequest, 'caller'>, authenticate: () => Promise<T>): Promise<T> {
  try {
    return await authenticate();
  } catch (e) {
    if (trail !== undefined && trail.enabled() && e instanceof PermissionDenied) await trail.logRequest(inputOf(trail, { ...a, caller: undefined }), e.message);
    throw e;
  }
}

export async function audited(trail: AuditTrail | undefined, a: AuditedRequest, run: () => Promise<Reply>): Promise<Reply> {
  if (trail === undefined || !trail.enabled()) return run();
  const input = inputOf(trail, a);
  await trail.logRequest(input);
  let reply: Reply;
  try {
    reply = await run();
  } catch (e) {
    await trail.logResponse(input, { error: (e as Error).message }).catch(() => undefined);
    throw e;
  }
  await trail.logResponse(input, outcomeOf(reply));
  return reply;
}
