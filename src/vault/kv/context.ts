/**
 * What every KV v2 handler receives, and the reads they share.
 *
 *   const meta = await loadMetadata(ctx, 'app/db');   // a copy to change; undefined when the key was never written
 *   const view = await viewMetadata(ctx, 'app/db');   // shared and frozen: to read only
 */
import type { LogicalRequest, LogicalResponse } from '../logical.js';
import { getDecoded, type Store } from '../../storage/store.js';
import { NotFound } from '../../core/errors.js';
import type { KeyedMutex } from '../../core/keyed-mutex.js';
import { CONFIG_KEY, metaKey } from './layout.js';
import { DEFAULT_CONFIG, decodeConfig, decodeMetadata, type KeyMetadata, type KvConfig } from './model.js';
import { rfc3339 } from './time.js';

export interface KvContext {
  readonly store: Store;
  readonly now: () => Date;
  readonly locks: KeyedMutex;
}

/** `path` is the secret's path (or list prefix), already stripped of `data/`, `metadata/`, ... */
export type Handler = (ctx: KvContext, path: string, req: LogicalRequest) => Promise<LogicalResponse | null>;

/**
 * A key's metadata to read only: decrypted and decoded once per stored version (the barrier's
 * memo), frozen and shared by every reader until the key is written again.
 */
export function viewMetadata(ctx: KvContext, path: string): Promise<Readonly<KeyMetadata> | undefined> {
  return getDecoded(ctx.store, metaKey(path), decodeMetadata);
}

/** A key's metadata to change and write back: a private copy of the shared view. */
export async function loadMetadata(ctx: KvContext, path: string): Promise<KeyMetadata | undefined> {
  const meta = await viewMetadata(ctx, path);
  return meta === undefined ? undefined : structuredClone(meta);
}

/** The mount's config, read on every write: decoded once per stored version, and frozen. */
export async function loadConfig(ctx: KvContext): Promise<Readonly<KvConfig>> {
  return (await getDecoded(ctx.store, CONFIG_KEY, decodeConfig)) ?? DEFAULT_CONFIG;
}

/** Runs `fn` holding the per-secret lock, so read-modify-write of one key never interleaves. */
export function withKeyLock<T>(ctx: KvContext, path: string, fn: () => Promise<T>): Promise<T> {
  return ctx.locks.run(`key:${path}`, fn);
}

export const timestamp = (ctx: KvContext): { date: Date; text: string } => {
  const date = ctx.now();
  return { date, text: rfc3339(date) };
};

export { NotFoundWithData } from '../../core/errors.js';
