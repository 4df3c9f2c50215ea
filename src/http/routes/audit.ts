/**
 * sys/audit: list, enable and disable audit devices (Vault's logical_system.go audit paths), and
 * sys/audit-hash: a value hashed as a device's entries hash it. Root namespace only, sudo for the
 * device table as in Vault. On a performance secondary a non-local device is refused (Vault's
 * 400), never forwarded: each cluster's primary enables its replicated devices.
 *
 *   GET sys/audit -> { "file/": { type, description, options, local, path } }
 */
import { z } from 'zod';
import { InvalidRequest, ReplicatedWriteRefused } from '../../core/errors.js';
import type { AuditDevices, AuditEntry } from '../../vault/audit/devices.js';
import { boolish, empty, stringMap } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { op, type Route } from '../route.js';

function view(e: AuditEntry): Record<string, unknown> {
  return { type: e.type, description: e.description, options: e.options, local: e.local, path: e.path };
}

const EnableBody = z.object({
  type: z.string().min(1, 'type is required'),
  description: z.string().optional(),
  options: stringMap.nullish(),
  local: boolish.optional(),
});

const HashBody = z.object({ input: z.string().optional() });

export function auditRoutes(audit: AuditDevices): Route[] {
  return [
    {
      pattern: 'sys/audit',
      standby: 'serve',
      access: 'sudo',
      scope: 'node',
      operations: {
        read: op(empty, async () => ok(Object.fromEntries(audit.list().map((e) => [e.path, view(e)]))), 'List the enabled audit devices.'),
      },
    },
    {
      pattern: 'sys/audit/*path',
      access: 'sudo',
      scope: 'node',
      operations: {
        update: op(EnableBody, async ({ params, fields }) => {
          try {
            await audit.enable(params.path ?? '', {
              type: fields.type,
              ...(fields.description !== undefined ? { description: fields.description } : {}),
              ...(fields.options ? { options: fields.options } : {}),
              ...(fields.local !== undefined ? { local: fields.local } : {}),
            });
          } catch (e) {
            if (e instanceof ReplicatedWriteRefused) throw new InvalidRequest('cannot add a non-local mount to a replication secondary');
            throw e;
          }
          return noContent();
        }, 'Enable an audit device at this path.'),
        delete: op(empty, async ({ params }) => {
          try {
            await audit.disable(params.path ?? '');
          } catch (e) {
            if (e instanceof ReplicatedWriteRefused) throw new InvalidRequest('cannot unmount a non-local mount on a replication secondary');
            throw e;
          }
          return noContent();
        }, 'Disable the audit device at this path.'),
      },
    },
    {
      pattern: 'sys/audit-hash/*path',
      access: 'token',
      scope: 'node',
      operations: {
        update: op(HashBody, async ({ params, fields }) => ok({ hash: audit.hash(params.path ?? '', fields.input ?? '') }), 'Hash a value with the salt of the audit device at this path.'),
      },
    },
  ];
}
