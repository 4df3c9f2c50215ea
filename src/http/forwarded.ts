/**
 * The primary's side of write forwarding: runs a write that a performance secondary authorized
 * and forwarded (REPLICATION.md 8) through the same dispatcher as a client's request, with the
 * secondary as the authority instead of a token (dispatchForwarded), and answers its Reply before
 * rendering, or its error as Vault's `{errors}` with the status a client would have got.
 *
 *   const run = forwardedExecutor(services, routes, (e) => log.error({ err: e }, 'forwarded write failed'));
 *   const { kind, status, body } = await run('perf-east', forwardRequest, await filters.scopeFor('perf-east'));
 */
import { Internal } from '../core/errors.js';
import type { ForwardScope } from '../core/paths-filter.js';
import type { ForwardReply, ForwardRequest } from '../replication/index.js';
import { dispatchForwarded, type Services } from './dispatch.js';
import type { Route } from './route.js';
import { forwardedApiRequest } from './request.js';
import { errorReply } from './status.js';

export type ForwardedAnswer = Omit<ForwardReply, 'commitIndex'>;

export function forwardedExecutor(
  services: Services,
  routes: readonly Route[],
  onInternal: (e: unknown) => void,
): (secondaryId: string, req: ForwardRequest, scope: ForwardScope) => Promise<ForwardedAnswer> {
  return async (secondaryId, fwd, scope) => {
    try {
      const reply = await dispatchForwarded(services, routes, forwardedApiRequest(fwd, secondaryId), secondaryId, scope);
      switch (reply.kind) {
        case 'none':
          return { kind: 'none', status: 204, body: {} };
        case 'bare':
          return { kind: 'bare', status: reply.status, body: reply.body !== null && typeof reply.body === 'object' ? (reply.body as Record<string, unknown>) : {} };
        case 'envelope':
          return { kind: 'envelope', status: reply.status ?? 200, body: { data: reply.data, warnings: reply.warnings ?? [], auth: reply.auth ?? null } };
        case 'stream':
          // Only node routes stream, and those never run for a forwarding secondary.
          throw new Internal('a streamed reply cannot be forwarded');
      }
    } catch (e) {
      const r = errorReply(e);
      if (r.internal) onInternal(e);
      return { kind: 'error', status: r.status, body: r.body };
    }
  };
}
