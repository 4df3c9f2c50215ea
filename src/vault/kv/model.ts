/**
 * KV v2's stored records and the pure rules over them (versions window, deletion, rendering).
 * Times are stored as RFC 3339 strings, exactly as they are returned; '' means "not set".
 *
 *   const pruned = addVersion(meta, { created_time: t, deletion_time: '', destroyed: false }, config);
 *   const body = versionView(meta, meta.current_version);  // the `data/` write response
 */
import { z } from 'zod';
import { Internal } from '../../core/errors.js';
import { goDuration, reached } from './time.js';

/** Vault keeps this many versions when neither the mount nor the key sets max_versions. */
export const DEFAULT_MAX_VERSIONS = 10;
/** config.delete_version_after of -1 second disables the feature mount-wide (Vault's convention). */
export const DELETE_VERSION_AFTER_DISABLED = -1;

const versionMetaSchema = z.object({
  created_time: z.string(),
  deletion_time: z.string(),
  destroyed: z.boolean(),
});
export type VersionMeta = z.infer<typeof versionMetaSchema>;

const keyMetadataSchema = z.object({
  created_time: z.string(),
  updated_time: z.string(),
  current_version: z.number().int().nonnegative(),
  oldest_version: z.number().int().nonnegative(),
  max_versions: z.number().int().nonnegative(),
  cas_required: z.boolean(),
  /** Seconds; 0 = unset. */
  delete_version_after: z.number().int().nonnegative(),
  custom_metadata: z.record(z.string(), z.string()).nullable(),
  /** Keyed by decimal version number, oldest_version..current_version minus pruned ones. */
  versions: z.record(z.string(), versionMetaSchema),
});
export type KeyMetadata = z.infer<typeof keyMetadataSchema>;

const configSchema = z.object({
  max_versions: z.number().int().nonnegative(),
  cas_required: z.boolean(),
  /** Seconds; 0 = unset, DELETE_VERSION_AFTER_DISABLED = disabled. */
  delete_version_after: z.number().int(),
});
export type KvConfig = z.infer<typeof configSchema>;

export const DEFAULT_CONFIG: KvConfig = { max_versions: 0, cas_required: false, delete_version_after: 0 };

export function newMetadata(now: string): KeyMetadata {
  return {
    created_time: now,
    updated_time: now,
    current_version: 0,
    oldest_version: 0,
    max_versions: 0,
    cas_required: false,
    delete_version_after: 0,
    custom_metadata: null,
    versions: {},
  };
}

export const encode = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

function decode<T>(schema: z.ZodType<T>, raw: Buffer, what: string): T {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new Internal(`corrupt ${what}: not JSON`, { cause: e });
  }
  const result = schema.safeParse(json);
  if (!result.success) throw new Internal(`corrupt ${what}: ${result.error.message}`);
  return result.data;
}

export const decodeMetadata = (raw: Buffer): KeyMetadata => decode(keyMetadataSchema, raw, 'kv key metadata');
export const decodeConfig = (raw: Buffer): KvConfig => decode(configSchema, raw, 'kv config');
const secretDataSchema = z.record(z.string(), z.unknown());
export const decodeSecretData = (raw: Buffer): Record<string, unknown> => decode(secretDataSchema, raw, 'kv secret data');

/**
 * When a version written at `created` is deleted automatically: after the smaller non-zero of the
 * mount's and the key's delete_version_after; never if both are unset or the mount disables it.
 */
export function autoDeletionTime(created: Date, config: KvConfig, meta: KeyMetadata): Date | undefined {
  if (config.delete_version_after === DELETE_VERSION_AFTER_DISABLED) return undefined;
  const candidates = [config.delete_version_after, meta.delete_version_after].filter((s) => s > 0);
  if (candidates.length === 0) return undefined;
  return new Date(created.getTime() + Math.min(...candidates) * 1000);
}

/**
 * Appends the next version and slides the window. Vault keeps the greater of the mount's and the
 * key's max_versions (10 when both are 0); oldest_version starts at 0, as in Vault. Returns the
 * versions that fell out of the window and whose data must be removed in the same commit.
 */
export function addVersion(meta: KeyMetadata, vm: VersionMeta, config: KvConfig): number[] {
  meta.current_version += 1;
  meta.versions[String(meta.current_version)] = vm;
  meta.updated_time = vm.created_time;

  const keep = Math.max(meta.max_versions, config.max_versions) || DEFAULT_MAX_VERSIONS;
  if (meta.current_version - meta.oldest_version < keep) return [];
  const last = meta.current_version - keep;
  const withData: number[] = [];
  for (let v = meta.oldest_version; v <= last; v++) {
    const old = meta.versions[String(v)];
    if (old && !old.destroyed) withData.push(v);
    delete meta.versions[String(v)];
  }
  meta.oldest_version = last + 1;
  return withData;
}

/** A version is unreadable once destroyed or once its deletion_time has passed. */
export function isReadable(vm: VersionMeta, now: Date): boolean {
  return !vm.destroyed && !reached(vm.deletion_time, now);
}

/** The metadata block of a `data/` read, and the body of a `data/` write or patch response. */
export function versionView(meta: KeyMetadata, version: number, vm: VersionMeta): Record<string, unknown> {
  return {
    created_time: vm.created_time,
    custom_metadata: meta.custom_metadata,
    deletion_time: vm.deletion_time,
    destroyed: vm.destroyed,
    version,
  };
}

/** The body of a `metadata/` read. */
export function metadataView(meta: KeyMetadata): Record<string, unknown> {
  return {
    cas_required: meta.cas_required,
    created_time: meta.created_time,
    current_version: meta.current_version,
    custom_metadata: meta.custom_metadata,
    delete_version_after: goDuration(meta.delete_version_after),
    max_versions: meta.max_versions,
    oldest_version: meta.oldest_version,
    updated_time: meta.updated_time,
    versions: meta.versions,
  };
}

export function configView(config: KvConfig): Record<string, unknown> {
  return {
    cas_required: config.cas_required,
    delete_version_after: goDuration(config.delete_version_after),
    max_versions: config.max_versions,
  };
}
