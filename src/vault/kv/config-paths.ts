/**
 * `config`: the mount-wide max_versions, cas_required and delete_version_after.
 *
 *   await writeConfig(ctx, 'config', { operation: 'update', path: 'config', data: { max_versions: 5 } });
 *   await readConfig(ctx, 'config', ...)  // { data: { cas_required: false, delete_version_after: '0s', max_versions: 5 } }
 */
import { z } from 'zod';
import { type Handler, loadConfig } from './context.js';
import { field, optional, parseFields } from './fields.js';
import { CONFIG_KEY } from './layout.js';
import { DELETE_VERSION_AFTER_DISABLED, configView, encode } from './model.js';

const configSchema = z.object({
  max_versions: optional(field.uint),
  cas_required: optional(field.bool),
  /** Negative disables automatic deletion on every key; 0 clears the setting. */
  delete_version_after: optional(field.duration(true)),
});

export const readConfig: Handler = async (ctx) => ({ data: configView(await loadConfig(ctx)) });

export const writeConfig: Handler = async (ctx, _path, req) => {
  const fields = parseFields(configSchema, req.data);
  if (Object.values(fields).every((v) => v === undefined)) return null;
  return ctx.locks.run('config', async () => {
    const config = { ...(await loadConfig(ctx)) };
    if (fields.max_versions !== undefined) config.max_versions = fields.max_versions;
    if (fields.cas_required !== undefined) config.cas_required = fields.cas_required;
    const dva = fields.delete_version_after;
    if (dva !== undefined) config.delete_version_after = dva < 0 ? DELETE_VERSION_AFTER_DISABLED : dva;
    await ctx.store.commit([{ type: 'put', key: CONFIG_KEY, value: encode(config) }]);
    return null;
  });
};
