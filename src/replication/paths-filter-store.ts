/**
 * Performance paths filters at rest, one per secondary id, in the local class
 * (`local/replication/performance/filters/<id>`): a DR secondary of the primary holds them, so the
 * filters survive a DR failover; no performance secondary ever receives them.
 *
 *   const filters = new PathsFilterStore(() => core.store());
 *   await filters.set('east', parsePathsFilter({ mode: 'deny', paths: ['team-a'] }));
 *   await filters.get('east');     // { mode: 'deny', paths: ['team-a/'], given: ['team-a'] }
 *   await filters.delete('east');  // true if there was one
 *
 * The route validates the body (parsePathsFilter), the id (known_secondaries) and the paths
 * (assertFilterPathsExist) before calling set; set itself re-checks shape, never existence.
 */
import { Internal, InvalidRequest, isTesseraError } from '../core/errors.js';
import { filterAsGiven, parsePathsFilter, type PathsFilter } from '../core/paths-filter.js';
import { LocalKeys } from '../storage/keyspace.js';
import type { Store } from '../storage/store.js';

/** The activation-token id rule (SECONDARY_ID in driver.ts): 1 to 128 of [A-Za-z0-9_.-], not starting with '.' or '-'. */
const SECONDARY_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

function assertId(id: string): void {
  if (!SECONDARY_ID.test(id)) throw new InvalidRequest(`"${id.slice(0, 40)}" is not a valid secondary id`);
}

function decode(id: string, raw: Buffer): PathsFilter {
  try {
    return parsePathsFilter(JSON.parse(raw.toString('utf8')) as { mode?: unknown; paths?: unknown });
  } catch (e) {
    if (e instanceof SyntaxError || (isTesseraError(e) && e.code === 'invalid_request')) {
      throw new Internal(`the stored paths filter of secondary "${id}" is malformed`, { cause: e });
    }
    throw e;
  }
}

export class PathsFilterStore {
  constructor(private readonly store: () => Store) {}

  async get(id: string): Promise<PathsFilter | undefined> {
    assertId(id);
    const raw = await this.store().get(LocalKeys.performanceFilter(id));
    return raw === undefined ? undefined : decode(id, raw);
  }

  /** Creates or replaces the filter of `id` (one commit), its paths stored as the operator wrote them. */
  async set(id: string, filter: PathsFilter): Promise<void> {
    assertId(id);
    const clean = filterAsGiven(parsePathsFilter(filterAsGiven(filter)));
    await this.store().commit([{ type: 'put', key: LocalKeys.performanceFilter(id), value: Buffer.from(JSON.stringify(clean)) }]);
  }

  /** Removes the filter of `id`; false (and no commit) when there was none. */
  async delete(id: string): Promise<boolean> {
    assertId(id);
    const key = LocalKeys.performanceFilter(id);
    if ((await this.store().get(key)) === undefined) return false;
    await this.store().commit([{ type: 'del', key }]);
    return true;
  }

  /** The ids that have a filter, sorted. */
  async list(): Promise<string[]> {
    return (await this.store().list(LocalKeys.performanceFiltersPrefix)).filter((c) => !c.endsWith('/')).sort();
  }

  /** Every filter by id (the primary loads these to build each secondary's predicate). */
  async all(): Promise<Map<string, PathsFilter>> {
    const out = new Map<string, PathsFilter>();
    for (const id of await this.list()) {
      const f = await this.get(id);
      if (f !== undefined) out.set(id, f);
    }
    return out;
  }
}
