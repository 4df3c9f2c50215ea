/**
 * The barrier keys: `sys/rotate`, `sys/key-status`, `sys/rotate/config` (token, sudo where Vault
 * asks it) and `sys/rekey/{init,update,verify,backup}` in Vault's wire: the rekey endpoints are
 * authorized by the shares given (no token, as Vault's HTTP handlers) and answer bare objects;
 * `backup` is a logical path (sudo, envelope).
 *
 *   routes.push(...keyRoutes(core));
 */
import { z } from 'zod';
import { InvalidRequest } from '../../core/errors.js';
import type { RekeyBackup } from '../../seal/rekey.js';
import type { VaultCore } from '../../vault/core.js';
import { REKEY_BACKUP_KEY } from '../../vault/core.js';
import { boolish, duration, empty, intish, stringList } from '../fields.js';
import { bare, envelope, noContent, ok } from '../reply.js';
import { op, type Route } from '../route.js';

type KeyCore = Pick<VaultCore, 'keys' | 'rekey' | 'store'>;

const InitBody = z.object({
  secret_shares: intish,
  secret_threshold: intish,
  stored_shares: intish.optional(),
  pgp_keys: stringList.nullish(),
  backup: boolish.optional(),
  require_verification: boolish.optional(),
});

const KeyBody = z.object({ key: z.string().optional(), nonce: z.string().optional() });

const RotateConfigBody = z.object({ max_operations: intish.optional(), interval: duration.optional(), enabled: boolish.optional() });

/** The share of a rekey update, refused as Vault's handler refuses it. */
function keyOf(fields: z.infer<typeof KeyBody>): { key: string; nonce: string } {
  if (fields.key === undefined || fields.key === '') throw new InvalidRequest("'key' must specified in request body as JSON");
  return { key: fields.key, nonce: fields.nonce ?? '' };
}

export function keyRoutes(core: KeyCore): Route[] {
  const body = { access: 'body', scope: 'node' } as const;
  return [
    {
      pattern: 'sys/rotate/config',
      standby: 'serve',
      access: 'sudo',
      scope: 'node',
      operations: {
        read: op(empty, async () => ok({ ...(await core.keys.rotateConfig()) }), 'Read the automatic key rotation config.'),
        update: op(RotateConfigBody, async ({ fields }) => {
          await core.keys.setRotateConfig({
            ...(fields.max_operations !== undefined ? { max_operations: fields.max_operations } : {}),
            ...(fields.interval !== undefined ? { interval: fields.interval } : {}),
            ...(fields.enabled !== undefined ? { enabled: fields.enabled } : {}),
          });
          return noContent();
        }, 'Configure automatic key rotation.'),
      },
    },
    {
      pattern: 'sys/rotate',
      access: 'sudo',
      scope: 'node',
      operations: {
        update: op(empty, async () => {
          await core.keys.rotate();
          return noContent();
        }, 'Rotate the backend encryption key used to persist data.'),
      },
    },
    {
      pattern: 'sys/key-status',
      standby: 'serve',
      access: 'token',
      scope: 'node',
      operations: {
        read: op(empty, async ({ req }) => {
          const status = { ...(await core.keys.status()) };
          // Vault's old clients read the fields at the top level: both, as Vault answers.
          return bare(200, { ...envelope(req.id, { kind: 'envelope', data: status }), ...status });
        }, 'Provides information about the backend encryption key.'),
      },
    },
    {
      pattern: 'sys/rekey/init',
      ...body,
      operations: {
        read: op(empty, async () => bare(200, await core.rekey.status()), 'Reads the configuration and progress of the current rekey attempt.'),
        update: op(InitBody, async ({ fields }) => {
          if ((fields.stored_shares ?? 0) > 1) throw new InvalidRequest('stored shares not supported');
          return bare(200, await core.rekey.start({
            secret_shares: fields.secret_shares,
            secret_threshold: fields.secret_threshold,
            pgp_keys: fields.pgp_keys ?? undefined,
            backup: fields.backup,
            require_verification: fields.require_verification,
          }));
        }, 'Initializes a new rekey attempt.'),
        delete: op(empty, async () => {
          await core.rekey.cancel();
          return noContent();
        }, 'Cancels any in-progress rekey.'),
      },
    },
    {
      pattern: 'sys/rekey/update',
      ...body,
      operations: {
        update: op(KeyBody, async ({ fields }) => {
          const { key, nonce } = keyOf(fields);
          return bare(200, await core.rekey.update(key, nonce));
        }, 'Enter a single unseal key share to progress the rekey of the Vault.'),
      },
    },
    {
      pattern: 'sys/rekey/verify',
      ...body,
      operations: {
        read: op(empty, async () => bare(200, await core.rekey.verifyStatus()), 'Read the configuration and progress of the current rekey verification attempt.'),
        update: op(KeyBody, async ({ fields }) => {
          const { key, nonce } = keyOf(fields);
          return bare(200, await core.rekey.verifyUpdate(key, nonce));
        }, 'Enter a single new key share to progress the rekey verification operation.'),
        delete: op(empty, async () => bare(200, await core.rekey.verifyCancel()), 'Cancel any in-progress rekey verification operation.'),
      },
    },
    {
      pattern: 'sys/rekey/backup',
      access: 'sudo',
      scope: 'node',
      operations: {
        read: op(empty, async () => {
          const raw = await core.store().get(REKEY_BACKUP_KEY);
          if (raw === undefined) throw new InvalidRequest('no backed-up keys found');
          const backup = JSON.parse(raw.toString('utf8')) as RekeyBackup;
          const keysBase64 = Object.fromEntries(Object.entries(backup.keys).map(([fp, ks]) => [fp, ks.map((k) => Buffer.from(k, 'hex').toString('base64'))]));
          return ok({ nonce: backup.nonce, keys: backup.keys, keys_base64: keysBase64 });
        }, 'Return the backup copy of PGP-encrypted unseal keys.'),
        delete: op(empty, async () => {
          await core.store().commit([{ type: 'del', key: REKEY_BACKUP_KEY }]);
          return noContent();
        }, 'Delete the backup copy of PGP-encrypted unseal keys.'),
      },
    },
  ];
}
