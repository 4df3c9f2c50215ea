/**
 * The storage layout shared by the secret-engine mount table (mounts.ts) and the auth mount table
 * (auth/table.ts): one key per entry, `<prefix><uuid>` for replicated entries and
 * `<localPrefix><uuid>` for `local: true` ones, so a performance paths filter can drop an entry by
 * key. Tables of the older layout (one JSON array per class) are still read, and moved to per-entry
 * keys by the first write of their class (see `migrationOps`).
 *
 *   const MOUNTS = { prefix: 'core/mounts/', localPrefix: 'local/core/mounts/', legacy: 'core/mounts', legacyLocal: 'local/core/mounts' };
 *   const { entries, legacy } = await readTable<MountEntry>(store, MOUNTS, false);
 */
import { InvalidRequest } from '../core/errors.js';
import type { Op, Store } from '../storage/store.js';

export interface TableLayout {
  readonly prefix: string;
  readonly localPrefix: string;
  readonly legacy: string;
  readonly legacyLocal: string;
}

export interface TableEntry {
  readonly uuid: string;
  readonly local: boolean;
}

export function entryKey(layout: TableLayout, e: TableEntry): string {
  return (e.local ? layout.localPrefix : layout.prefix) + e.uuid;
}

export function encodeEntry(e: TableEntry): Buffer {
  return Buffer.from(JSON.stringify(e));
}

/**
 * The stored table of one class: per-entry keys, plus any legacy array not yet migrated (a
 * per-entry key wins over a legacy entry with the same uuid). `legacy` tells whether the array exists.
 */
export async function readTable<E extends TableEntry>(store: Store, layout: TableLayout, local: boolean): Promise<{ entries: E[]; legacy: boolean }> {
  const prefix = local ? layout.localPrefix : layout.prefix;
  const byUuid = new Map<string, E>();
  const legacyRaw = await store.get(local ? layout.legacyLocal : layout.legacy);
  if (legacyRaw) for (const e of JSON.parse(legacyRaw.toString('utf8')) as E[]) byUuid.set(e.uuid, e);
  for (const child of await store.list(prefix)) {
    if (child.endsWith('/')) continue;
    const raw = await store.get(prefix + child);
    if (raw) byUuid.set(child, JSON.parse(raw.toString('utf8')) as E);
  }
  return { entries: [...byUuid.values()], legacy: legacyRaw !== undefined };
}

/**
 * The ops that move one class's legacy array to per-entry keys, [] when there is none: every
 * entry of `entries` of that class gets its own key (except keys in `skip`, which the caller's own
 * ops already write or delete), and the array is deleted, in the caller's commit, so no state
 * mixes the two layouts.
 */
export function migrationOps(layout: TableLayout, entries: readonly TableEntry[], local: boolean, legacy: boolean, skip: ReadonlySet<string>): Op[] {
  if (!legacy) return [];
  const ops: Op[] = entries
    .filter((e) => e.local === local && !skip.has(entryKey(layout, e)))
    .map((e) => ({ type: 'put', key: entryKey(layout, e), value: encodeEntry(e) }));
  ops.push({ type: 'del', key: local ? layout.legacyLocal : layout.legacy });
  return ops;
}

/** Where an entry is mounted: its namespace, and its path with one trailing slash (`team/kv/`). */
export interface MountedAt {
  readonly namespace: string;
  readonly path: string;
}

/** A mount path as tables store it: no leading slash, one trailing slash; `what` names it in the error. */
export function mountPath(path: string, what: string): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') throw new InvalidRequest(`${what} is required`);
  return `${trimmed}/`;
}

/** The entry mounted at, above or below `path` in `namespace` (mounts may not nest). */
export function clashing<E extends MountedAt>(entries: readonly E[], namespace: string, path: string): E | undefined {
  return entries.find((e) => e.namespace === namespace && (e.path.startsWith(path) || path.startsWith(e.path)));
}

/** The longest entry whose path prefixes `path` in `namespace`, and the rest of `path` after it. */
export function longestMount<E extends MountedAt>(entries: readonly E[], namespace: string, path: string): { entry: E; rest: string } | undefined {
  const withSlash = path + '/';
  let best: E | undefined;
  for (const e of entries) {
    if (e.namespace !== namespace || !withSlash.startsWith(e.path)) continue;
    if (!best || e.path.length > best.path.length) best = e;
  }
  if (!best) return undefined;
  return { entry: best, rest: path.slice(best.path.length).replace(/^\/+/, '') };
}
