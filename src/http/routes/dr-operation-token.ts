/**
 * DR operation token endpoints on a DR secondary (spec 4.3, WIRE.md section 5): the generation
 * attempt is `sys/generate-root`'s routes (generate-root.ts) at another path, so `vault operator
 * generate-root -dr-token` works unmodified, and the bare `generate-operation-token` path answers as
 * its `/attempt` does; operation-token/delete revokes a token.
 *
 *   routes.push(...drOperationTokenRoutes(operationTokens));   // an OperationTokens instance
 *
 * Authorization is the shares themselves (and the token, for delete), never a client token.
 */
import { z } from 'zod';
import { noContent } from '../reply.js';
import { op, type Route } from '../route.js';
import { generationRoutes, type GenerationService } from './generate-root.js';

/** What these routes need; OperationTokens provides it. */
export interface DrOperationTokenService extends GenerationService {
  revoke(token: string): Promise<void>;
}

const DeleteBody = z.object({ dr_operation_token: z.string().min(1, 'missing required field "dr_operation_token"') });

const BASE = 'sys/replication/dr/secondary';
const COMMON = {
  access: 'body',
  scope: 'node',
  drSecondary: true,
  license: { feature: 'dr-replication' },
} as const;

export function drOperationTokenRoutes(svc: DrOperationTokenService): Route[] {
  return [
    // Spec 4.3 names the bare path as the one that creates a DR operation token: it is the
    // attempt (read, start, cancel) of the one generation mechanism, shares go to .../update.
    ...generationRoutes(`${BASE}/generate-operation-token`, COMMON, svc, { bareAttempt: true }),
    {
      pattern: `${BASE}/operation-token/delete`,
      ...COMMON,
      operations: {
        update: op(DeleteBody, async ({ fields }) => {
          await svc.revoke(fields.dr_operation_token);
          return noContent();
        }, 'Revoke a DR operation token.'),
      },
    },
  ];
}
