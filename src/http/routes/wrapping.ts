/**
 * Response wrapping: sys/wrapping/wrap, unwrap, lookup. Unwrap and lookup are authorized by the
 * wrapping token itself (in the body, or as the client token), so they are public routes.
 */
import { z } from 'zod';
import { InvalidRequest } from '../../core/errors.js';
import type { Wrapping } from '../../vault/wrapping.js';
import { ok } from '../reply.js';
import { op, type Route } from '../route.js';

const TokenBody = z.object({ token: z.string().optional() }).passthrough();

export function wrappingRoutes(wrapping: Wrapping): Route[] {
  return [
    {
      pattern: 'sys/wrapping/unwrap',
      access: 'public',
      operations: {
        update: op(TokenBody, async ({ fields, req }) => {
          const token = fields.token || req.token;
          if (!token) throw new InvalidRequest('missing wrapping token');
          const res = await wrapping.unwrap(token);
          return ok(res.data ?? null, {
            ...(res.auth ? { auth: res.auth } : {}),
            ...(res.warnings ? { warnings: [...res.warnings] } : {}),
          });
        }),
      },
    },
    {
      pattern: 'sys/wrapping/lookup',
      access: 'public',
      operations: {
        update: op(TokenBody, async ({ fields, req }) => {
          const token = fields.token || req.token;
          if (!token) throw new InvalidRequest('missing wrapping token');
          return ok({ ...(await wrapping.lookup(token)) });
        }),
      },
    },
    {
      pattern: 'sys/wrapping/wrap',
      access: 'token',
      operations: {
        update: op(z.record(z.string(), z.unknown()), async ({ fields, req }) => {
          if (req.wrapTTL === undefined || req.wrapTTL <= 0) throw new InvalidRequest('sys/wrapping/wrap needs a X-Vault-Wrap-TTL header');
          return ok({ ...fields });
        }),
      },
    },
  ];
}
