/**
 * Performance paths filters, pure: the filter model, its validation, and the decision which
 * replicated storage keys a performance secondary may hold (REPLICATION.md section 8, spec 2.5/2.6).
 *
 *   const f = parsePathsFilter({ mode: 'deny', paths: ['team-a', 'secret/'] }); // paths 'team-a/', 'secret/'
 *   assertFilterPathsExist(f, catalog);            // InvalidRequest for a path naming nothing filterable
 *   const kf = keyFilter(f, catalog.mounts);
 *   kf.keyAllowed('logical/<uuid>/data/x');       // false when that mount is covered by the deny
 *   kf.opAllowed({ type: 'del', key: 'logical/<gone-uuid>/x' }); // true: see "unknown mounts"
 *   dynamicFilter(f, catalog);                     // { dynamic_filtered_mounts, dynamic_filtered_namespaces }
 *
 * Coverage is by path string: a filter path P (always ending in '/') covers every mount whose full
 * path (namespace path + mount path) starts with P and every namespace whose path starts with P. So
 * a namespace covers its mounts and child namespaces, present and future, with no catalog lookup.
 *
 * Replicated key layout (one table, LAYOUT; src/vault is the writer):
 *   core/mounts/<uuid>, core/auth/<uuid>   one mount entry each     -> the mount's verdict
 *   logical/<uuid>/..., auth/<uuid>/...    a mount's data           -> the mount's verdict
 *   core/namespaces/<path without '/'>     a namespace record       -> the namespace's presence
 *   core/policy/<_root | encoded ns>/<n>   a policy of a namespace  -> the namespace's presence
 *   core/mounts (legacy single table)      all mounts in one value  -> never under a filter
 *   anything else replicated               system records           -> always
 * Local and node classes are never served to a performance secondary (its own local class is its own).
 *
 * Unknown mounts: a uuid absent from the catalog is a mount that no longer exists (uuids are never
 * reused and a mount's path never changes, so the catalog may be newer than the keys it judges).
 * Its puts never pass (no value of a mount we cannot place leaks); its deletes pass, so a secondary
 * that held the mount drops it from the stream; a delete of a key it never had is a no-op.
 */
import { InvalidRequest } from './errors.js';

export type FilterMode = 'allow' | 'deny';

export interface PathsFilter {
  readonly mode: FilterMode;
  /** Normalised (no leading '/', one trailing '/'), unique, in the order given: what matching uses. */
  readonly paths: readonly string[];
  /**
   * The same paths as the operator wrote them (surrounding spaces dropped), one per entry of
   * `paths`: what is stored and read back. Absent: `paths` itself.
   */
  readonly given?: readonly string[];
}

/** Spec section 8 states none; ours. */
export const FILTER_LIMITS = { maxPaths: 256, maxPathLength: 512 } as const;

export interface CatalogMount {
  /** '' for the root namespace, else `a/b/`. */
  readonly namespace: string;
  /** `secret/`, or `auth/userpass/` for an auth method. */
  readonly path: string;
  readonly uuid: string;
  readonly local: boolean;
}

/** The mounts and namespaces of the primary at one moment, as plain data. */
export interface Catalog {
  readonly mounts: readonly CatalogMount[];
  /** Namespace paths `a/`, `a/b/` (root excluded). */
  readonly namespaces: readonly string[];
}

export const LAYOUT = {
  mountTables: ['core/mounts/', 'core/auth/'],
  mountData: ['logical/', 'auth/'],
  legacyMountTables: ['core/mounts', 'core/auth'],
  namespaces: 'core/namespaces/',
  policies: 'core/policy/',
  rootPolicySegment: '_root',
} as const;

export function fullPath(m: Pick<CatalogMount, 'namespace' | 'path'>): string {
  return m.namespace + m.path;
}

/** `/team-a/secret` -> `team-a/secret/`; InvalidRequest for empty, `.`/`..` or empty segments, control characters. */
export function normaliseFilterPath(raw: string): string {
  const trimmed = raw.trim().replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') throw new InvalidRequest('paths filter: a path must not be empty');
  if (trimmed.length + 1 > FILTER_LIMITS.maxPathLength) throw new InvalidRequest(`paths filter: a path is longer than ${FILTER_LIMITS.maxPathLength} characters`);
  if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw new InvalidRequest('paths filter: a path contains a control character');
  for (const seg of trimmed.split('/')) {
    if (seg === '' || seg === '.' || seg === '..') throw new InvalidRequest(`paths filter: "${trimmed.slice(0, 64)}" has an empty, "." or ".." segment`);
  }
  return trimmed + '/';
}

/**
 * The filter from a request body: `mode` 'allow' (default) or 'deny'; `paths` an array of strings
 * or one comma-separated string (Vault accepts both), default []. Duplicates (after
 * normalisation) are dropped, the first kept as written in `given`. Throws InvalidRequest, naming
 * the problem, for anything else.
 */
export function parsePathsFilter(input: { readonly mode?: unknown; readonly paths?: unknown }): PathsFilter {
  const mode = input.mode === undefined || input.mode === '' ? 'allow' : input.mode;
  if (mode !== 'allow' && mode !== 'deny') throw new InvalidRequest('paths filter: mode must be "allow" or "deny"');
  let raw: unknown[];
  if (input.paths === undefined || input.paths === null) raw = [];
  else if (typeof input.paths === 'string') raw = input.paths === '' ? [] : input.paths.split(',');
  else if (Array.isArray(input.paths)) raw = input.paths;
  else throw new InvalidRequest('paths filter: paths must be an array of strings');
  if (raw.length > FILTER_LIMITS.maxPaths) throw new InvalidRequest(`paths filter: at most ${FILTER_LIMITS.maxPaths} paths`);
  const paths: string[] = [];
  const given: string[] = [];
  for (const p of raw) {
    if (typeof p !== 'string') throw new InvalidRequest('paths filter: paths must be an array of strings');
    const n = normaliseFilterPath(p);
    if (paths.includes(n)) continue;
    paths.push(n);
    given.push(p.trim());
  }
  return { mode, paths, given };
}

/** The filter as the operator wrote it (what is stored and read back): `{ mode, paths }`. */
export function filterAsGiven(f: PathsFilter): { mode: FilterMode; paths: string[] } {
  return { mode: f.mode, paths: [...(f.given ?? f.paths)] };
}

/** Whether some filter path covers `path` (a mount's full path or a namespace path). */
function covered(filter: PathsFilter, path: string): boolean {
  return filter.paths.some((p) => path.startsWith(p));
}

/** A non-local mount passes the filter. Local mounts never replicate to a performance secondary. */
export function mountAllowed(filter: PathsFilter | undefined, m: CatalogMount): boolean {
  if (m.local) return false;
  if (filter === undefined) return true;
  return covered(filter, fullPath(m)) === (filter.mode === 'allow');
}

/**
 * Whether namespace `ns` ('' root, else `a/b/`) exists on the secondary. Root always does. In allow
 * mode a namespace is present when covered or when it is a proper ancestor of a filter path (it
 * contains something allowed); in deny mode unless covered.
 */
export function namespacePresent(filter: PathsFilter | undefined, ns: string): boolean {
  if (ns === '' || filter === undefined) return true;
  if (filter.mode === 'deny') return !covered(filter, ns);
  return covered(filter, ns) || filter.paths.some((p) => p !== ns && p.startsWith(ns));
}

/** Filter paths that name no replicated mount and no namespace in `catalog` (exact full paths). */
export function unknownFilterPaths(filter: PathsFilter, catalog: Catalog): string[] {
  const known = new Set<string>(catalog.namespaces);
  for (const m of catalog.mounts) if (!m.local) known.add(fullPath(m));
  return filter.paths.filter((p) => !known.has(p));
}

/** InvalidRequest, naming up to five offenders, unless every path names a replicated mount or a namespace. */
export function assertFilterPathsExist(filter: PathsFilter, catalog: Catalog): void {
  const bad = unknownFilterPaths(filter, catalog);
  if (bad.length === 0) return;
  const shown = bad.slice(0, 5).map((p) => `"${p.slice(0, 64)}"`).join(', ');
  throw new InvalidRequest(`paths filter: not a replicated mount or namespace: ${shown}${bad.length > 5 ? ` and ${bad.length - 5} more` : ''}`);
}

export type KeyVerdict = 'allow' | 'deny' | 'unknown-mount';

export interface KeyFilter {
  /** The verdict on one logical key; see the module comment. */
  verdict(key: string): KeyVerdict;
  /** The key may be held by (served to) the secondary: verdict 'allow'. */
  keyAllowed(key: string): boolean;
  /** One WAL op may be streamed: an allowed key, or the delete of a key of an unknown mount. */
  opAllowed(op: { readonly type: 'put' | 'del'; readonly key: string }): boolean;
}

const LOCAL = 'local/';
const NODE = 'node/';

/**
 * The uuid after `prefix`: tables are `<prefix><uuid>`, data `<prefix><uuid>/...`. undefined when
 * `key` is not under `prefix`; '' when it is but malformed (judged 'deny').
 */
function uuidAfter(key: string, prefix: string, data: boolean): string | undefined {
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  const slash = rest.indexOf('/');
  if (!data) return slash === -1 ? rest : '';
  return slash > 0 ? rest.slice(0, slash) : '';
}

function namespaceOfPolicyKey(key: string): string | undefined {
  const rest = key.slice(LAYOUT.policies.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return undefined;
  const seg = rest.slice(0, slash);
  if (seg === LAYOUT.rootPolicySegment) return '';
  try {
    return decodeURIComponent(seg);
  } catch {
    return undefined;
  }
}

/**
 * The key predicate of one secondary: `filter` undefined means no filter (every replicated key).
 * `mounts` is the primary's mount catalog (see "unknown mounts" above for how fresh it must be).
 */
export function keyFilter(filter: PathsFilter | undefined, mounts: readonly CatalogMount[]): KeyFilter {
  const byUuid = new Map<string, CatalogMount>();
  for (const m of mounts) byUuid.set(m.uuid, m);
  const mountVerdict = (uuid: string): KeyVerdict => {
    const m = byUuid.get(uuid);
    if (m === undefined) return 'unknown-mount';
    return mountAllowed(filter, m) ? 'allow' : 'deny';
  };
  const nsVerdict = (ns: string | undefined): KeyVerdict => (ns !== undefined && namespacePresent(filter, ns) ? 'allow' : 'deny');

  const verdict = (key: string): KeyVerdict => {
    if (key.startsWith(LOCAL) || key.startsWith(NODE)) return 'deny';
    if (filter === undefined) return 'allow';
    if ((LAYOUT.legacyMountTables as readonly string[]).includes(key)) return 'deny';
    for (const prefix of LAYOUT.mountTables) {
      const uuid = uuidAfter(key, prefix, false);
      if (uuid !== undefined) return uuid === '' ? 'deny' : mountVerdict(uuid);
    }
    for (const prefix of LAYOUT.mountData) {
      const uuid = uuidAfter(key, prefix, true);
      if (uuid !== undefined) return uuid === '' ? 'deny' : mountVerdict(uuid);
    }
    if (key.startsWith(LAYOUT.namespaces)) {
      const path = key.slice(LAYOUT.namespaces.length);
      return path === '' ? 'deny' : nsVerdict(path + '/');
    }
    if (key.startsWith(LAYOUT.policies)) return nsVerdict(namespaceOfPolicyKey(key));
    return 'allow';
  };
  return {
    verdict,
    keyAllowed: (key) => verdict(key) === 'allow',
    opAllowed: (op) => {
      const v = verdict(op.key);
      return v === 'allow' || (v === 'unknown-mount' && op.type === 'del');
    },
  };
}

export interface DynamicFilter {
  /** Full paths of the replicated mounts the filter excludes now, sorted. */
  readonly dynamic_filtered_mounts: string[];
  /** Namespaces absent on the secondary now, sorted. */
  readonly dynamic_filtered_namespaces: string[];
}

/** Spec 2.6: the concrete mounts and namespaces `filter` excludes in `catalog` (local mounts are never listed). */
export function dynamicFilter(filter: PathsFilter | undefined, catalog: Catalog): DynamicFilter {
  const mounts = catalog.mounts.filter((m) => !m.local && !mountAllowed(filter, m)).map(fullPath);
  const namespaces = catalog.namespaces.filter((ns) => !namespacePresent(filter, ns));
  return { dynamic_filtered_mounts: [...new Set(mounts)].sort(), dynamic_filtered_namespaces: [...new Set(namespaces)].sort() };
}

/**
 * What a secondary's forwarded request may name on its primary (REPLICATION.md 8): exactly what its
 * filter lets it hold. A denied or local mount, and an absent namespace, do not exist for it.
 */
export interface ForwardScope {
  /** Namespace `ns` ('' root, else `a/b/`) exists for the secondary. */
  namespace(ns: string): boolean;
  /**
   * Full path `full` (namespace path + mount-relative path) lies in a mount the secondary holds;
   * a path under no mount is judged as a mount created there would be.
   */
  mount(full: string): boolean;
}

export function forwardScope(filter: PathsFilter | undefined, catalog: Catalog): ForwardScope {
  return {
    namespace: (ns) => namespacePresent(filter, ns),
    mount: (full) => {
      const p = full.endsWith('/') ? full : `${full}/`;
      let best: CatalogMount | undefined;
      for (const m of catalog.mounts) if (p.startsWith(fullPath(m)) && fullPath(m).length > (best ? fullPath(best).length : 0)) best = m;
      return mountAllowed(filter, best ?? { namespace: '', path: p, uuid: '', local: false });
    },
  };
}

/** Whether a WAL entry's ops change the mount catalog (a cached KeyFilter must then be rebuilt). */
export function touchesCatalog(ops: Iterable<{ readonly key: string }>): boolean {
  for (const op of ops) {
    if (LAYOUT.mountTables.some((p) => op.key.startsWith(p)) || (LAYOUT.legacyMountTables as readonly string[]).includes(op.key)) return true;
  }
  return false;
}
