/**
 * Small system endpoints: sys/license/status and sys/metrics (Prometheus text).
 */
import { z } from 'zod';
import { InvalidRequest } from '../../core/errors.js';
import { empty } from '../fields.js';
import { bare, ok } from '../reply.js';
import { op, type Route } from '../route.js';

export interface SystemService {
  licenseStatus(): Record<string, unknown>;
  metrics(): Promise<{ contentType: string; text: string }>;
}

export function systemRoutes(sys: SystemService): Route[] {
  return [
    {
      pattern: 'sys/license/status',
      standby: 'serve',
      access: 'token',
      scope: 'node',
      operations: { read: op(empty, async () => ok(sys.licenseStatus()), "Read the status of the node's license.") },
    },
    {
      pattern: 'sys/metrics',
      access: 'token',
      scope: 'node',
      drSecondary: true,
      operations: {
        read: op(z.object({ format: z.string().optional() }).passthrough(), async ({ fields }) => {
          if (fields.format !== undefined && fields.format !== 'prometheus') {
            throw new InvalidRequest('unsupported metrics format; use format=prometheus');
          }
          const { contentType, text } = await sys.metrics();
          return bare(200, text, contentType);
        }, "Export the node's metrics (Prometheus text format)."),
      },
    },
  ];
}
