/**
 * `metadata/<path>`: read, write, patch, delete (every version and the metadata), and list.
 *
 *   await writeMetadata(ctx, 'app/db', { operation: 'update', path: 'metadata/app/db',
 *     data: { max_versions: '5', cas_required: 'true', custom_metadata: { owner: 'ops' } } });
 */
import { z } from 'zod';
import { NotFound } from '../../core/errors.js';
import type { Op } from '../../storage/store.js';
import type { LogicalResponse } from '../logical.js';
import { type Handler, loadConfig, loadMetadata, timestamp, viewMetadata, withKeyLock } from './context.js';
import { checkCustomMetadata } from './custom-metadata.js';
import { field, optional, parseFields } from './fields.js';
import { META_PREFIX, metaKey, versionKey } from './layout.js';
import { encode, type KeyMetadata, type KvConfig, metadataView, newMetadata } from './model.js';

const metadataSchema = z.object({
  max_versions: optional(field.uint),
  cas_required: optional(field.bool),
  delete_version_after: optional(field.duration(false)),
  custom_metadata: optional(field.kvPairs),
});
type MetadataFields = z.output<typeof metadataSchema>;

const CAS_IGNORED = '"cas_required" set to false, but is mandated by backend config. This value will be ignored.';

function casWarning(fields: MetadataFields, config: KvConfig): LogicalResponse | null {
  return fields.cas_required === false && config.cas_required ? { warnings: [CAS_IGNORED] } : null;
}

function applyScalars(meta: KeyMetadata, fields: MetadataFields): void {
  if (fields.max_versions !== undefined) meta.max_versions = fields.max_versions;
  if (fields.cas_required !== undefined) meta.cas_required = fields.cas_required;
  if (fields.delete_version_after !== undefined) meta.delete_version_after = fields.delete_version_after;
}

const given = (f: MetadataFields): boolean => Object.values(f).some((v) => v !== undefined);

export const readMetadata: Handler = async (ctx, path) => {
  const meta = await viewMetadata(ctx, path);
  if (meta === undefined) throw new NotFound();
  return { data: metadataView(meta) };
};

/** Creates the metadata if needed (with no versions); custom_metadata, when given, replaces. */
export const writeMetadata: Handler = async (ctx, path, req) => {
  const fields = parseFields(metadataSchema, req.data);
  if (!given(fields)) return null;
  // Vault weak-decodes a null value to "", which the length rule then rejects.
  const custom = fields.custom_metadata && Object.fromEntries(Object.entries(fields.custom_metadata).map(([k, v]) => [k, v ?? '']));
  if (custom) checkCustomMetadata(custom);
  const config = await loadConfig(ctx);
  return withKeyLock(ctx, path, async () => {
    const meta = (await loadMetadata(ctx, path)) ?? newMetadata(timestamp(ctx).text);
    applyScalars(meta, fields);
    if (custom) meta.custom_metadata = custom;
    await ctx.store.commit([{ type: 'put', key: metaKey(path), value: encode(meta) }]);
    return casWarning(fields, config);
  });
};

/** Like write, but only for existing metadata, and custom_metadata merges (null removes a key). */
export const patchMetadata: Handler = async (ctx, path, req) => {
  const fields = parseFields(metadataSchema, req.data);
  const patch = fields.custom_metadata;
  if (patch) {
    checkCustomMetadata(Object.fromEntries(Object.entries(patch).filter((e): e is [string, string] => e[1] !== null)));
  }
  const config = await loadConfig(ctx);
  return withKeyLock(ctx, path, async () => {
    const meta = await loadMetadata(ctx, path);
    if (meta === undefined) throw new NotFound();
    applyScalars(meta, fields);
    if (patch) {
      const merged = new Map(Object.entries(meta.custom_metadata ?? {}));
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) merged.delete(k);
        else merged.set(k, v);
      }
      meta.custom_metadata = Object.fromEntries(merged);
    }
    await ctx.store.commit([{ type: 'put', key: metaKey(path), value: encode(meta) }]);
    return casWarning(fields, config);
  });
};

/** Removes the metadata and every remaining version's data in one commit. */
export const deleteMetadata: Handler = async (ctx, path) =>
  withKeyLock(ctx, path, async () => {
    const meta = await loadMetadata(ctx, path);
    if (meta === undefined) return null;
    const ops: Op[] = Object.entries(meta.versions)
      .filter(([, vm]) => !vm.destroyed)
      .map(([v]) => ({ type: 'del', key: versionKey(path, Number(v)) }));
    ops.push({ type: 'del', key: metaKey(path) });
    await ctx.store.commit(ops);
    return null;
  });

/** `dir` is '' or ends with '/'; an empty listing is a 404, as Vault's HTTP layer answers. */
export const listMetadata: Handler = async (ctx, dir) => {
  // No keys: the HTTP layer answers 404, as Vault's does for every LIST.
  return { data: { keys: await ctx.store.list(META_PREFIX + dir) } };
};
