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

/**
 * `resolveToken` maps what a client presents to a wrapping token: replication activation tokens
 * are JWTs that name their wrapping token in `jti` (WIRE.md section 4).
 */
export function wrappingRoutes(wrapping: Wrapping, resolveToken: (presented: string) => Promise<string> = async (t) => t): Route[] {
  return [
    {
      pattern: 'sys/wrapping/unwrap',
      access: 'public',
      operations: {
        update: op(TokenBody, async ({ fields, req }) => {
          const presented = fields.token || req.token;
          if (!presented) throw new InvalidRequest('missing wrapping token');
          const res = await wrapping.unwrap(await resolveToken(presented));
          return ok(res.data ?? null, {
            ...(res.auth ? { auth: res.auth } : {}),
            ...(res.warnings ? { warnings: [...res.warnings] } : {}),
          });
        }, 'Unwrap a response-wrapping token.'),
      },
    },
    {
      pattern: 'sys/wrapping/lookup',
      standby: 'serve',
      access: 'public',
      operations: {
        update: op(TokenBody, async ({ fields, req }) => {
          const presented = fields.token || req.token;
          if (!presented) throw new InvalidRequest('missing wrapping token');
          return ok({ ...(await wrapping.lookup(await resolveToken(presented))) });
        }, 'Look up the properties of a response-wrapping token.'),
      },
    },
    {
      pattern: 'sys/wrapping/wrap',
      access: 'token',
      operations: {
        update: op(z.record(z.string(), z.unknown()), async ({ fields, req }) => {
          if (req.wrapTTL === undefined || req.wrapTTL <= 0) throw new InvalidRequest('sys/wrapping/wrap needs a X-Vault-Wrap-TTL header');
          return ok({ ...fields });
        }, 'Response-wrap an arbitrary JSON object.'),
      },
    },
  ];
}
