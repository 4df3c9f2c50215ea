/**
 * `delete/<path>`, `undelete/<path>` and `destroy/<path>` with `{versions: [..]}` (or "1,2").
 * Unknown, destroyed (and for delete, already deleted) versions are skipped, as in Vault.
 *
 *   await destroyVersions(ctx, 'app/db', { operation: 'update', path: 'destroy/app/db', data: { versions: [1] } });
 */
import { z } from 'zod';
import { InvalidRequest } from '../../core/errors.js';
import type { Op } from '../../storage/store.js';
import type { LogicalRequest } from '../logical.js';
import { type Handler, loadConfig, loadMetadata, timestamp, withKeyLock } from './context.js';
import { field, optional, parseFields } from './fields.js';
import { metaKey, versionKey } from './layout.js';
import { autoDeletionTime, encode } from './model.js';
import { reached, rfc3339 } from './time.js';

const versionsSchema = z.object({ versions: optional(field.intList) });

/** Vault's wording differs in case between delete/undelete and destroy; kept verbatim. */
function requireVersions(req: LogicalRequest, message: string): number[] {
  const { versions } = parseFields(versionsSchema, req.data);
  if (versions === undefined || versions.length === 0) throw new InvalidRequest(message);
  return versions;
}

export const deleteVersions: Handler = async (ctx, path, req) => {
  const versions = requireVersions(req, 'No version number provided');
  return withKeyLock(ctx, path, async () => {
    const meta = await loadMetadata(ctx, path);
    if (meta === undefined) return null;
    const now = timestamp(ctx);
    let changed = false;
    for (const v of versions) {
      const vm = meta.versions[String(v)];
      if (vm === undefined || vm.destroyed || reached(vm.deletion_time, now.date)) continue;
      vm.deletion_time = now.text;
      changed = true;
    }
    if (changed) await ctx.store.commit([{ type: 'put', key: metaKey(path), value: encode(meta) }]);
    return null;
  });
};

/** Clears deletion; where delete_version_after applies, the version is rescheduled from now. */
export const undeleteVersions: Handler = async (ctx, path, req) => {
  const versions = requireVersions(req, 'No version number provided');
  const config = await loadConfig(ctx);
  return withKeyLock(ctx, path, async () => {
    const meta = await loadMetadata(ctx, path);
    if (meta === undefined) return null;
    const now = timestamp(ctx);
    const auto = autoDeletionTime(now.date, config, meta);
    let changed = false;
    for (const v of versions) {
      const vm = meta.versions[String(v)];
      if (vm === undefined || vm.destroyed) continue;
      vm.deletion_time = auto ? rfc3339(auto) : '';
      changed = true;
    }
    if (changed) await ctx.store.commit([{ type: 'put', key: metaKey(path), value: encode(meta) }]);
    return null;
  });
};

/** Marks versions destroyed and removes their data in the same commit. */
export const destroyVersions: Handler = async (ctx, path, req) => {
  const versions = requireVersions(req, 'no version number provided');
  return withKeyLock(ctx, path, async () => {
    const meta = await loadMetadata(ctx, path);
    if (meta === undefined) return null;
    const dels: Op[] = [];
    for (const v of new Set(versions)) {
      const vm = meta.versions[String(v)];
      if (vm === undefined || vm.destroyed) continue;
      vm.destroyed = true;
      dels.push({ type: 'del', key: versionKey(path, v) });
    }
    if (dels.length > 0) await ctx.store.commit([{ type: 'put', key: metaKey(path), value: encode(meta) }, ...dels]);
    return null;
  });
};
