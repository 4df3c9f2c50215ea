/**
 * Performance paths filters as a performance primary serves them (spec 2.5, 2.6, 4.2): the
 * operator's set/read/delete of one secondary's filter, its dynamic filter, and the key filter the
 * stream and the Merkle hashes apply (PrimaryStreamer's `pathsFilter` hook).
 *
 *   const filters = new PathsFilters({ store: () => core.store(), registry: () => ['east', 'west'], catalog });
 *   await filters.set('east', { mode: 'deny', paths: ['team-a'] });   // validated first, then one commit
 *   await filters.dynamic('east');   // { dynamic_filtered_mounts: ['team-a/kv/'], dynamic_filtered_namespaces: ['team-a/'] }
 *   const kf = await filters.keyFilter('east');                      // undefined when none is set
 *
 * A filter change reaches a running secondary through the WAL: the filter's own (local-class)
 * commit is an entry the stream of that secondary recognises (filterChangedIn), and it makes the
 * secondary reconcile by Merkle diff, with the new filter, from there (primary-service.ts).
 */
import { InvalidRequest } from '../core/errors.js';
import {
  type Catalog, assertFilterPathsExist, dynamicFilter, filterAsGiven, forwardScope, keyFilter, type ForwardScope, parsePathsFilter, type DynamicFilter, type KeyFilter, type PathsFilter,
} from '../core/paths-filter.js';
import type { WalEntry } from '../core/wal.js';
import type { StorageEngine } from '../storage/engine.js';
import { LocalKeys } from '../storage/keyspace.js';
import type { Store } from '../storage/store.js';
import { DYNAMIC_FILTER_KEY } from './applier.js';
import { PathsFilterStore } from './paths-filter-store.js';

export interface PathsFiltersOptions {
  readonly store: () => Store;
  /**
   * The ids of this performance primary's registry that are not revoked (known_secondaries);
   * throws InvalidRequest, naming the mode, when this node is not a performance primary.
   */
  readonly registry: () => readonly string[];
  /**
   * The mounts, auth mounts and namespaces the filters judge, read from storage now (the vault
   * owns their tables): every durable commit shows in it.
   */
  readonly catalog: () => Promise<Catalog>;
  /** Moves legacy one-array mount tables to one key per mount (a filter drops mounts by key). */
  readonly migrateLegacyTables?: () => Promise<void>;
}

/** The first index among `entries` whose ops set or delete the filter of `secondaryId`, else undefined. */
export function filterChangedIn(secondaryId: string, entries: readonly WalEntry[]): number | undefined {
  const key = LocalKeys.performanceFilter(secondaryId);
  const at = entries.findIndex((e) => e.ops.some((op) => op.key === key));
  return at === -1 ? undefined : at;
}

export class PathsFilters {
  readonly stored: PathsFilterStore;

  constructor(private readonly o: PathsFiltersOptions) {
    this.stored = new PathsFilterStore(o.store);
  }

  /** Throws unless this is a performance primary that knows `id` (refused before anything changes). */
  private known(id: string): void {
    const ids = this.o.registry();
    if (!ids.includes(id)) {
      throw new InvalidRequest(`no performance secondary "${id.slice(0, 64)}" is known to this primary (known_secondaries: ${ids.length === 0 ? 'none' : ids.slice(0, 10).join(', ')})`);
    }
  }

  /** Creates or replaces the filter of `id`; every check (mode, id, paths) before the one commit. */
  async set(id: string, body: { readonly mode?: unknown; readonly paths?: unknown }): Promise<PathsFilter> {
    const filter = parsePathsFilter(body);
    this.known(id);
    assertFilterPathsExist(filter, await this.o.catalog());
    await this.o.migrateLegacyTables?.();
    await this.stored.set(id, filter);
    return filter;
  }

  /** The filter of `id` as the operator wrote it; undefined when it has none (every replicated mount and namespace reaches it). */
  async read(id: string): Promise<{ mode: string; paths: string[] } | undefined> {
    this.known(id);
    const f = await this.stored.get(id);
    return f === undefined ? undefined : filterAsGiven(f);
  }

  /**
   * Removes the filter of `id`. Allowed for an id no longer in the registry (a revoked secondary's
   * leftover filter can be cleaned up); nothing to delete is not an error.
   */
  async remove(id: string): Promise<void> {
    this.o.registry();
    await this.stored.delete(id);
  }

  /** Spec 2.6: the mounts and namespaces the filter of `id` excludes now (empty lists without one). */
  async dynamic(id: string): Promise<DynamicFilter> {
    this.known(id);
    return dynamicFilter(await this.stored.get(id), await this.o.catalog());
  }

  /** The key filter of `id` over the catalog as of now; undefined when it has no filter. */
  async keyFilter(id: string): Promise<KeyFilter | undefined> {
    const f = await this.stored.get(id);
    if (f === undefined) return undefined;
    return keyFilter(f, (await this.o.catalog()).mounts);
  }

  /** What a forwarded request of `id` may name here: what its filter lets it hold (no registry check). */
  async scopeFor(id: string): Promise<ForwardScope> {
    return forwardScope(await this.stored.get(id), await this.o.catalog());
  }

  /** The dynamic filter of `id` from the current catalog, for the secondary to keep (no registry check). */
  async dynamicFor(id: string): Promise<DynamicFilter> {
    return dynamicFilter(await this.stored.get(id), await this.o.catalog());
  }
}

/**
 * A performance secondary's dynamic filter: the last one its primary told it (appended to a
 * streamed entry when the catalog changed, installed with each reconcile). Empty lists before any.
 */
export async function readSecondaryDynamicFilter(engine: Pick<StorageEngine, 'readRaw'>): Promise<DynamicFilter> {
  const raw = await engine.readRaw(DYNAMIC_FILTER_KEY);
  if (raw === undefined) return { dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] };
  const v = JSON.parse(raw.toString('utf8')) as Partial<DynamicFilter>;
  return { dynamic_filtered_mounts: [...(v.dynamic_filtered_mounts ?? [])], dynamic_filtered_namespaces: [...(v.dynamic_filtered_namespaces ?? [])] };
}
