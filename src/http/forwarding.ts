/**
 * Write forwarding as the HTTP layer of a performance secondary sees it (REPLICATION.md 8): the
 * request it sends to its primary, and the primary's reply turned back into a Reply that this node
 * renders itself (its own request id; response wrapping with its own tokens, since the primary's
 * would not be valid here).
 *
 *   const out = await services.forwardWrite(forwardRequestOf(req));
 *   return replyOfForwarded(out);
 */
import type { ForwardOutcome, ForwardRequest } from '../replication/index.js';
import { bare, type Reply } from './reply.js';
import type { ApiRequest } from './request.js';

export type { ForwardOutcome } from '../replication/index.js';

/** What crosses the cluster channel: never the client's token (tokens are local to a cluster). */
export function forwardRequestOf(req: ApiRequest): ForwardRequest {
  return {
    requestId: req.id,
    method: req.method,
    operation: req.operation,
    namespace: req.namespace,
    path: req.path,
    trailingSlash: req.trailingSlash,
    query: req.query,
    body: req.body,
  };
}

const objectOr = (v: unknown): Record<string, unknown> | null =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

const stringsOf = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** The primary's reply as this node's; this node's warnings join it (a 204 then becomes a 200, as in Vault). */
export function replyOfForwarded({ reply, warnings }: ForwardOutcome): Reply {
  const b = reply.body;
  switch (reply.kind) {
    case 'error':
      return bare(reply.status, { errors: stringsOf(b.errors) });
    case 'bare':
      return bare(reply.status, b);
    case 'none':
      return warnings.length === 0 ? { kind: 'none' } : { kind: 'envelope', data: null, warnings: [...warnings] };
    case 'envelope': {
      const all = [...stringsOf(b.warnings), ...warnings];
      const auth = objectOr(b.auth);
      const status = reply.status !== 200 ? { status: reply.status } : {};
      return { kind: 'envelope', data: objectOr(b.data), ...(all.length > 0 ? { warnings: all } : {}), ...(auth ? { auth } : {}), ...status };
    }
  }
}
