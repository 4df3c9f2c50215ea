/**
 * `data/<path>`: read (optionally `version`), write, patch, and soft-delete of the latest version.
 *
 *   await writeData(ctx, 'app/db', { operation: 'update', path: 'data/app/db',
 *     data: { data: { password: 's3cret' }, options: { cas: 0 } } });
 *   // { data: { created_time, custom_metadata, deletion_time, destroyed, version: 1 } }
 */
import { z } from 'zod';
import { Internal, InvalidRequest, NotFound } from '../../core/errors.js';
import { type Handler, type KvContext, NotFoundWithData, loadConfig, loadMetadata, timestamp, viewMetadata, withKeyLock } from './context.js';
import { field, optional, parseFields } from './fields.js';
import { metaKey, versionKey } from './layout.js';
import { mergePatch } from './merge-patch.js';
import {
  type KeyMetadata,
  type KvConfig,
  type VersionMeta,
  addVersion,
  autoDeletionTime,
  decodeSecretData,
  encode,
  isReadable,
  newMetadata,
  versionView,
} from './model.js';
import { reached, rfc3339 } from './time.js';
import { deepFreeze, getDecoded } from '../../storage/store.js';

const writeSchema = z.object({ data: optional(field.map), options: optional(field.map) });
const readSchema = z.object({ version: optional(field.int) });
const casSchema = z.object({ cas: optional(field.int) });

/**
 * Vault's check-and-set rule: a given `cas` must equal the current version (0 = "must not exist
 * yet"); without one, the write is refused if the mount or the key requires cas.
 */
function checkCas(options: Record<string, unknown> | undefined, config: KvConfig, meta: KeyMetadata): void {
  const parsed = casSchema.safeParse(options ?? {});
  if (!parsed.success) throw new InvalidRequest('error parsing check-and-set parameter');
  const { cas } = parsed.data;
  if (cas !== undefined) {
    if (cas !== meta.current_version) throw new InvalidRequest('check-and-set parameter did not match the current version');
  } else if (config.cas_required || meta.cas_required) {
    throw new InvalidRequest('check-and-set parameter required for this call');
  }
}

/** New version + updated metadata + pruned versions' data: one atomic commit. */
async function commitVersion(
  ctx: KvContext,
  path: string,
  meta: KeyMetadata,
  config: KvConfig,
  data: Record<string, unknown>,
  now: { date: Date; text: string },
): Promise<Record<string, unknown>> {
  const deletion = autoDeletionTime(now.date, config, meta);
  const vm = { created_time: now.text, deletion_time: deletion ? rfc3339(deletion) : '', destroyed: false };
  const pruned = addVersion(meta, vm, config);
  await ctx.store.commit([
    { type: 'put', key: versionKey(path, meta.current_version), value: encode(data) },
    { type: 'put', key: metaKey(path), value: encode(meta) },
    ...pruned.map((v) => ({ type: 'del' as const, key: versionKey(path, v) })),
  ]);
  return versionView(meta, meta.current_version, vm);
}

/**
 * The `metadata` of a read of version `n`, built once per decoded version record and shared
 * (frozen) while the record is: with the shared data, every part of a repeated read's answer is
 * then a frozen object whose audit hashes are remembered (audit/hash.ts).
 */
const versionViews = new WeakMap<object, Readonly<Record<string, unknown>>>();

function sharedVersionView(meta: Readonly<KeyMetadata>, n: number, vm: Readonly<VersionMeta>): Readonly<Record<string, unknown>> {
  if (!Object.isFrozen(vm)) return versionView(meta, n, vm);
  let view = versionViews.get(vm);
  if (view === undefined) versionViews.set(vm, (view = deepFreeze(versionView(meta, n, vm))));
  return view;
}

export const readData: Handler = async (ctx, path, req) => {
  const { version } = parseFields(readSchema, req.data);
  const meta = await viewMetadata(ctx, path);
  if (meta === undefined) throw new NotFound();
  const n = version !== undefined && version > 0 ? version : meta.current_version;
  const vm = meta.versions[String(n)];
  if (vm === undefined) throw new NotFound();
  const metadata = sharedVersionView(meta, n, vm);
  if (!isReadable(vm, ctx.now())) throw new NotFoundWithData({ data: null, metadata });
  const data = await getDecoded(ctx.store, versionKey(path, n), decodeSecretData);
  // Reads take no lock: data gone after the metadata said otherwise means a destroy or prune
  // committed in between, and answering as if the read came after it is correct.
  if (data === undefined) throw new NotFound();
  return { data: { data, metadata } };
};

export const writeData: Handler = async (ctx, path, req) => {
  const body = parseFields(writeSchema, req.data);
  if (body.data === undefined) throw new InvalidRequest('no data provided');
  const data = body.data;
  const config = await loadConfig(ctx);
  return withKeyLock(ctx, path, async () => {
    const now = timestamp(ctx);
    const meta = (await loadMetadata(ctx, path)) ?? newMetadata(now.text);
    checkCas(body.options, config, meta);
    return { data: await commitVersion(ctx, path, meta, config, data, now) };
  });
};

/** Merges `data` into the latest version (JSON merge patch) and stores the result as a new one. */
export const patchData: Handler = async (ctx, path, req) => {
  const body = parseFields(writeSchema, req.data);
  if (body.data === undefined) throw new InvalidRequest('no data provided');
  const patch = body.data;
  return withKeyLock(ctx, path, async () => {
    const meta = await loadMetadata(ctx, path);
    if (meta === undefined) throw new NotFound();
    const config = await loadConfig(ctx);
    checkCas(body.options, config, meta);
    const n = meta.current_version;
    const vm = meta.versions[String(n)];
    if (vm === undefined) throw new NotFound();
    const now = timestamp(ctx);
    if (!isReadable(vm, now.date)) throw new NotFoundWithData(versionView(meta, n, vm));
    const raw = await ctx.store.get(versionKey(path, n));
    if (raw === undefined) throw new Internal(`kv: data of readable version ${n} is missing`);
    const merged = mergePatch(decodeSecretData(raw), patch) as Record<string, unknown>;
    return { data: await commitVersion(ctx, path, meta, config, merged, now) };
  });
};

/** Soft-deletes the latest version; a no-op when it is already deleted, destroyed or absent. */
export const deleteLatest: Handler = async (ctx, path) =>
  withKeyLock(ctx, path, async () => {
    const meta = await loadMetadata(ctx, path);
    if (meta === undefined) return null;
    const now = timestamp(ctx);
    const latest = meta.versions[String(meta.current_version)];
    if (latest === undefined || latest.destroyed || reached(latest.deletion_time, now.date)) return null;
    latest.deletion_time = now.text;
    await ctx.store.commit([{ type: 'put', key: metaKey(path), value: encode(meta) }]);
    return null;
  });
