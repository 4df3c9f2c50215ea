/**
 * The endpoints of a token generation from root key shares, in Vault's `sys/generate-root` wire
 * (WIRE.md sections 5 and 8): `.../attempt` (GET status, PUT|POST start with `otp` or `pgp_key`,
 * DELETE cancel) and `.../update` (`{key, nonce}`), each answering the bare status object. Used
 * for `sys/generate-root` here and for the DR `generate-operation-token` endpoints.
 *
 *   routes.push(...generateRootRoutes(rootGeneration));      // a RootGeneration
 *
 * Authorization is the shares themselves, never a client token; node scope: root namespace only.
 */
import { z } from 'zod';
import type { GenerationStart, GenerationStatus, GenerationUpdate } from '../../seal/root-generation.js';
import { empty } from '../fields.js';
import { bare, noContent } from '../reply.js';
import { op, type Route } from '../route.js';

/** What these routes need; RootGeneration (and OperationTokens) provide it. */
export interface GenerationService {
  start(request: GenerationStart): Promise<GenerationStatus>;
  status(): Promise<GenerationStatus>;
  cancel(): Promise<void>;
  update(request: GenerationUpdate): Promise<GenerationStatus>;
}

const StartBody = z.object({ otp: z.string().optional(), pgp_key: z.string().optional() });
const UpdateBody = z.object({ key: z.string().min(1, 'missing required field "key"'), nonce: z.string().min(1, 'missing required field "nonce"') });

/** Everything of a Route but its pattern and operations. */
export type RouteTraits = Omit<Route, 'pattern' | 'operations'>;

/**
 * `${base}/attempt` and `${base}/update` over `svc`, with the given traits. `bareAttempt`: `${base}`
 * itself answers as `${base}/attempt` does, on the same attempt (the DR bare path, spec 4.3).
 */
export function generationRoutes(base: string, traits: RouteTraits, svc: GenerationService, opts: { bareAttempt?: boolean } = {}): Route[] {
  const attempt: Route['operations'] = {
    read: op(empty, async () => bare(200, await svc.status()), 'Read the token generation attempt in progress.'),
    update: op(StartBody, async ({ fields }) => bare(200, await svc.start(fields)), 'Start a token generation attempt, with an OTP or a PGP key.'),
    // 204, as Vault answers a generate-root cancel.
    delete: op(empty, async () => {
      await svc.cancel();
      return noContent();
    }, 'Cancel the attempt and clear its progress.'),
  };
  return [
    ...(opts.bareAttempt === true ? [{ pattern: base, ...traits, operations: attempt }] : []),
    { pattern: `${base}/attempt`, ...traits, operations: attempt },
    {
      pattern: `${base}/update`,
      ...traits,
      operations: {
        update: op(UpdateBody, async ({ fields }) => bare(200, await svc.update(fields)), 'Provide one key share to the generation attempt.'),
      },
    },
  ];
}

/**
 * `sys/generate-root/*`: every unsealed node but a DR secondary (which answers only WIRE.md
 * section 6's list); no license feature, as in Vault.
 */
export function generateRootRoutes(svc: GenerationService): Route[] {
  return generationRoutes('sys/generate-root', { access: 'body', scope: 'node' }, svc);
}
