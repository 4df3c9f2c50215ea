/**
 * DR operation token endpoints on a DR secondary (spec 4.3, WIRE.md section 5): the generation
 * attempt answers bare objects like `sys/generate-root`, so `vault operator generate-root
 * -dr-token` works unmodified; operation-token/delete revokes a token.
 *
 *   routes.push(...drOperationTokenRoutes(operationTokens));   // an OperationTokens instance
 *
 * Authorization is the shares themselves (and the token, for delete), never a client token.
 */
import { z } from 'zod';
import type { AttemptStatus, StartRequest, UpdateRequest } from '../../replication/operation-token.js';
import { empty } from '../fields.js';
import { bare, noContent } from '../reply.js';
import { op, type Route } from '../route.js';

/** What these routes need; OperationTokens provides it. */
export interface DrOperationTokenService {
  start(request: StartRequest): Promise<AttemptStatus>;
  status(): Promise<AttemptStatus>;
  cancel(): Promise<void>;
  update(request: UpdateRequest): Promise<AttemptStatus>;
  revoke(token: string): Promise<void>;
}

const StartBody = z.object({ otp: z.string().optional(), pgp_key: z.string().optional() });
const UpdateBody = z.object({ key: z.string().min(1, 'missing required field "key"'), nonce: z.string().min(1, 'missing required field "nonce"') });
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
    {
      pattern: `${BASE}/generate-operation-token/attempt`,
      ...COMMON,
      operations: {
        read: op(empty, async () => bare(200, await svc.status()), 'Reads the generation attempt in progress'),
        update: op(StartBody, async ({ fields }) => bare(200, await svc.start(fields)), 'Starts a generation attempt'),
        // 204, as Vault answers a generate-root cancel.
        delete: op(empty, async () => {
          await svc.cancel();
          return noContent();
        }, 'Cancels the attempt and clears its progress'),
      },
    },
    {
      pattern: `${BASE}/generate-operation-token/update`,
      ...COMMON,
      operations: {
        update: op(UpdateBody, async ({ fields }) => bare(200, await svc.update(fields)), 'Provides one root key share'),
      },
    },
    {
      pattern: `${BASE}/operation-token/delete`,
      ...COMMON,
      operations: {
        update: op(DeleteBody, async ({ fields }) => {
          await svc.revoke(fields.dr_operation_token);
          return noContent();
        }, 'Revokes a DR operation token'),
      },
    },
  ];
}
