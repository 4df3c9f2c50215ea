/** Paths filters: parsing bounds, the key predicate as a table, and properties over random catalogs. */
import fc from 'fast-check';
import { isTesseraError } from './errors.js';
import {
  FILTER_LIMITS,
  assertFilterPathsExist,
  dynamicFilter,
  forwardScope,
  keyFilter,
  filterAsGiven,
  parsePathsFilter,
  touchesCatalog,
  unknownFilterPaths,
  type Catalog,
  type CatalogMount,
  type PathsFilter,
} from './paths-filter.js';

const m = (namespace: string, path: string, uuid: string, local = false): CatalogMount => ({ namespace, path, uuid, local });

const catalog: Catalog = {
  mounts: [
    m('', 'secret/', 'u-secret'),
    m('', 'kv/', 'u-kv'),
    m('', 'scratch/', 'u-local', true),
    m('', 'auth/userpass/', 'u-up'),
    m('team-a/', 'secret/', 'u-a-secret'),
    m('team-a/child/', 'db/', 'u-a-db'),
    m('team-b/', 'secret/', 'u-b-secret'),
  ],
  namespaces: ['team-a/', 'team-a/child/', 'team-b/'],
};

function invalid(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isTesseraError(e) && e.code === 'invalid_request') return e.message;
    throw e;
  }
  throw new Error('expected InvalidRequest');
}

describe('parsePathsFilter', () => {
  it('defaults to allow with no paths, normalises slashes and drops duplicates in order', () => {
    expect(parsePathsFilter({})).toEqual({ mode: 'allow', paths: [], given: [] });
    // `given` keeps the first spelling of each path as written, for reading back.
    expect(parsePathsFilter({ mode: 'deny', paths: ['/team-a', 'secret/', 'team-a/', 'secret//'] })).toEqual({ mode: 'deny', paths: ['team-a/', 'secret/'], given: ['/team-a', 'secret/'] });
    expect(filterAsGiven(parsePathsFilter({ paths: ' kv/ , x' }))).toEqual({ mode: 'allow', paths: ['kv/', 'x'] });
  });

  it('accepts a comma-separated string as Vault does', () => {
    expect(parsePathsFilter({ paths: 'a,b/c' }).paths).toEqual(['a/', 'b/c/']);
    expect(parsePathsFilter({ paths: '' }).paths).toEqual([]);
  });

  it.each([
    ['a bad mode', { mode: 'block', paths: [] }, /mode must be/],
    ['a non-string mode', { mode: 1 }, /mode must be/],
    ['paths not an array', { paths: { a: 1 } }, /array of strings/],
    ['a non-string path', { paths: ['a', 3] }, /array of strings/],
    ['an empty path', { paths: ['/'] }, /must not be empty/],
    ['a dot-dot segment', { paths: ['a/../b'] }, /segment/],
    ['an empty segment', { paths: ['a//b'] }, /segment/],
    ['a control character', { paths: ['a\nb'] }, /control character/],
    ['too many paths', { paths: Array.from({ length: FILTER_LIMITS.maxPaths + 1 }, (_, i) => `m${i}`) }, /at most 256/],
    ['a path too long', { paths: ['x'.repeat(FILTER_LIMITS.maxPathLength)] }, /longer than 512/],
  ])('refuses %s', (_name, input, msg) => {
    expect(invalid(() => parsePathsFilter(input))).toMatch(msg);
  });

  it('accepts exactly the bounds', () => {
    expect(parsePathsFilter({ paths: Array.from({ length: FILTER_LIMITS.maxPaths }, (_, i) => `m${i}`) }).paths).toHaveLength(256);
    expect(parsePathsFilter({ paths: ['x'.repeat(FILTER_LIMITS.maxPathLength - 1)] }).paths[0]).toHaveLength(512);
  });
});

describe('filter paths must name a replicated mount or a namespace', () => {
  it('accepts root mounts, namespaced mounts, auth mounts and namespaces', () => {
    expect(() => assertFilterPathsExist(parsePathsFilter({ paths: ['secret', 'team-a/secret', 'auth/userpass', 'team-a/child'] }), catalog)).not.toThrow();
  });

  it('names what is not one: unknown paths, a prefix of a mount, and a local mount', () => {
    const f = parsePathsFilter({ paths: ['nope', 'team-a/secret/sub', 'scratch', 'secret'] });
    expect(unknownFilterPaths(f, catalog)).toEqual(['nope/', 'team-a/secret/sub/', 'scratch/']);
    expect(invalid(() => assertFilterPathsExist(f, catalog))).toMatch(/"nope\/", "team-a\/secret\/sub\/", "scratch\/"/);
  });
});

const allow = (...paths: string[]): PathsFilter => parsePathsFilter({ mode: 'allow', paths });
const deny = (...paths: string[]): PathsFilter => parsePathsFilter({ mode: 'deny', paths });

describe('keyFilter: which replicated keys a performance secondary may hold', () => {
  const rows: Array<[string, PathsFilter | undefined, string, 'allow' | 'deny' | 'unknown-mount']> = [
    // No filter: the whole replicated class, never local or node.
    ['no filter, mount data', undefined, 'logical/u-secret/data/x', 'allow'],
    ['no filter, legacy table', undefined, 'core/mounts', 'allow'],
    ['no filter, local class', undefined, 'local/logical/u-local/x', 'deny'],
    ['no filter, node class', undefined, 'node/replication/dr/state', 'deny'],
    // Deny a root mount: its table entry and data, nothing else.
    ['deny secret/, its table entry', deny('secret'), 'core/mounts/u-secret', 'deny'],
    ['deny secret/, its data', deny('secret'), 'logical/u-secret/data/app', 'deny'],
    ['deny secret/, another root mount', deny('secret'), 'logical/u-kv/x', 'allow'],
    ['deny secret/, a same-named mount in a namespace', deny('secret'), 'logical/u-a-secret/x', 'allow'],
    ['deny secret/, a namespace record', deny('secret'), 'core/namespaces/team-a', 'allow'],
    ['deny secret/, a system record', deny('secret'), 'core/audit/x', 'allow'],
    // Deny a namespace: its mounts, child namespaces and their mounts, and their policies.
    ['deny team-a/, its mount', deny('team-a'), 'logical/u-a-secret/x', 'deny'],
    ['deny team-a/, a child namespace mount', deny('team-a'), 'core/mounts/u-a-db', 'deny'],
    ['deny team-a/, its record', deny('team-a'), 'core/namespaces/team-a', 'deny'],
    ['deny team-a/, its child record', deny('team-a'), 'core/namespaces/team-a/child', 'deny'],
    ['deny team-a/, a future child record', deny('team-a'), 'core/namespaces/team-a/later', 'deny'],
    ['deny team-a/, its policy', deny('team-a'), 'core/policy/team-a%2F/ops', 'deny'],
    ['deny team-a/, a child policy', deny('team-a'), 'core/policy/team-a%2Fchild%2F/ops', 'deny'],
    ['deny team-a/, a root policy', deny('team-a'), 'core/policy/_root/ops', 'allow'],
    ['deny team-a/, a sibling namespace', deny('team-a'), 'core/namespaces/team-b', 'allow'],
    ['deny team-a/, a name-prefix sibling', deny('team-a'), 'core/namespaces/team-ab', 'allow'],
    ['deny team-a/, a sibling mount', deny('team-a'), 'logical/u-b-secret/x', 'allow'],
    // Allow a namespaced mount: it and the namespaces that contain it.
    ['allow team-a/secret/, it', allow('team-a/secret'), 'logical/u-a-secret/x', 'allow'],
    ['allow team-a/secret/, its table entry', allow('team-a/secret'), 'core/mounts/u-a-secret', 'allow'],
    ['allow team-a/secret/, a root mount', allow('team-a/secret'), 'logical/u-secret/x', 'deny'],
    ['allow team-a/secret/, the containing namespace', allow('team-a/secret'), 'core/namespaces/team-a', 'allow'],
    ['allow team-a/secret/, its policies', allow('team-a/secret'), 'core/policy/team-a%2F/ops', 'allow'],
    ['allow team-a/secret/, a child namespace', allow('team-a/secret'), 'core/namespaces/team-a/child', 'deny'],
    ['allow team-a/secret/, a child mount', allow('team-a/secret'), 'logical/u-a-db/x', 'deny'],
    ['allow team-a/secret/, root policies', allow('team-a/secret'), 'core/policy/_root/ops', 'allow'],
    ['allow team-a/secret/, system records', allow('team-a/secret'), 'core/audit/x', 'allow'],
    ['allow team-a/secret/, the legacy table', allow('team-a/secret'), 'core/mounts', 'deny'],
    ['allow team-a/, a child namespace mount', allow('team-a'), 'logical/u-a-db/x', 'allow'],
    ['allow team-a/, a future child namespace', allow('team-a'), 'core/namespaces/team-a/later', 'allow'],
    ['allow team-a/, a future child policy', allow('team-a'), 'core/policy/team-a%2Flater%2F/p', 'allow'],
    ['allow nothing, a root mount', allow(), 'logical/u-kv/x', 'deny'],
    ['allow nothing, a namespace', allow(), 'core/namespaces/team-b', 'deny'],
    ['allow nothing, root policies', allow(), 'core/policy/_root/p', 'allow'],
    // Auth methods are mounts like any other.
    ['allow auth/userpass/, its data', allow('auth/userpass'), 'auth/u-up/user/alice', 'allow'],
    ['allow auth/userpass/, its table entry', allow('auth/userpass'), 'core/auth/u-up', 'allow'],
    ['deny auth/userpass/, its data', deny('auth/userpass'), 'auth/u-up/user/alice', 'deny'],
    // Local mounts never, even named in an allow filter; local class never.
    ['allow scratch/ (local), a stray replicated key', allow('scratch'), 'logical/u-local/x', 'deny'],
    ['deny nothing, the local class', deny(), 'local/core/mounts/u-local', 'deny'],
    // Unknown uuids and malformed keys under a filter.
    ['a mount no longer in the catalog', deny('kv'), 'logical/u-gone/x', 'unknown-mount'],
    ['its table entry', allow('secret'), 'core/mounts/u-gone', 'unknown-mount'],
    ['data key without a uuid', deny(), 'logical/', 'deny'],
    ['data key with only a uuid', deny(), 'logical/u-secret', 'deny'],
    ['table key with a tail', deny(), 'core/mounts/u-secret/x', 'deny'],
    ['a policy key without a name', deny(), 'core/policy/_root', 'deny'],
    ['a policy key badly encoded', deny(), 'core/policy/%E0%A4%A/p', 'deny'],
  ];

  it.each(rows)('%s', (_name, filter, key, want) => {
    const kf = keyFilter(filter, catalog.mounts);
    expect(kf.verdict(key)).toBe(want);
    expect(kf.keyAllowed(key)).toBe(want === 'allow');
  });

  it('covers a mount created later in a covered namespace (the predicate is rebuilt from the newer catalog)', () => {
    const later = [...catalog.mounts, m('team-a/child/', 'new/', 'u-new')];
    expect(keyFilter(deny('team-a'), later).keyAllowed('logical/u-new/x')).toBe(false);
    expect(keyFilter(allow('team-a'), later).keyAllowed('logical/u-new/x')).toBe(true);
  });

  it('streams the deletes of unknown mounts but never their puts', () => {
    const kf = keyFilter(allow('secret'), catalog.mounts);
    expect(kf.opAllowed({ type: 'del', key: 'logical/u-gone/x' })).toBe(true);
    expect(kf.opAllowed({ type: 'del', key: 'core/mounts/u-gone' })).toBe(true);
    expect(kf.opAllowed({ type: 'put', key: 'logical/u-gone/x' })).toBe(false);
    expect(kf.opAllowed({ type: 'del', key: 'logical/u-kv/x' })).toBe(false);
    expect(kf.opAllowed({ type: 'put', key: 'logical/u-secret/x' })).toBe(true);
  });
});

describe('dynamicFilter', () => {
  it('lists the concrete mounts and namespaces a deny excludes, never local mounts', () => {
    expect(dynamicFilter(deny('team-a', 'scratch'), catalog)).toEqual({
      dynamic_filtered_mounts: ['team-a/child/db/', 'team-a/secret/'],
      dynamic_filtered_namespaces: ['team-a/', 'team-a/child/'],
    });
  });

  it('lists everything an allow leaves out, keeping containing namespaces', () => {
    expect(dynamicFilter(allow('team-a/child/db'), catalog)).toEqual({
      dynamic_filtered_mounts: ['auth/userpass/', 'kv/', 'secret/', 'team-a/secret/', 'team-b/secret/'],
      dynamic_filtered_namespaces: ['team-b/'],
    });
  });

  it('is empty without a filter', () => {
    expect(dynamicFilter(undefined, catalog)).toEqual({ dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] });
  });
});

describe('touchesCatalog', () => {
  it('is true exactly for mount-table keys', () => {
    expect(touchesCatalog([{ key: 'logical/u/x' }, { key: 'core/mounts/u' }])).toBe(true);
    expect(touchesCatalog([{ key: 'core/auth/u' }])).toBe(true);
    expect(touchesCatalog([{ key: 'core/mounts' }])).toBe(true);
    expect(touchesCatalog([{ key: 'logical/u/x' }, { key: 'core/namespaces/a' }])).toBe(false);
  });
});

// ---- properties over random catalogs ----

const seg = fc.constantFrom('a', 'b', 'ab', 'c');
const nsPath = fc.array(seg, { minLength: 0, maxLength: 3 }).map((s) => (s.length === 0 ? '' : s.join('/') + '/'));
const randomCatalog: fc.Arbitrary<Catalog> = fc
  .array(fc.record({ namespace: nsPath, path: fc.constantFrom('secret/', 'kv/', 'a/', 'auth/userpass/'), local: fc.boolean() }), { maxLength: 12 })
  .map((ms) => {
    const mounts = ms.map((x, i) => ({ ...x, uuid: `u${i}` }));
    const namespaces = new Set<string>();
    for (const x of mounts) {
      const segs = x.namespace.split('/').filter((s) => s !== '');
      for (let i = 1; i <= segs.length; i++) namespaces.add(segs.slice(0, i).join('/') + '/');
    }
    return { mounts, namespaces: [...namespaces] };
  });
const filterPath = fc.oneof(nsPath.filter((p) => p !== ''), fc.tuple(nsPath, fc.constantFrom('secret/', 'kv/', 'a/')).map(([n, p]) => n + p));
const paths = fc.array(filterPath, { maxLength: 4 });

/** Every key of the catalog a filter may decide on, with the namespace it belongs to. */
function keysOf(c: Catalog): Array<{ key: string; ns?: string; mount?: CatalogMount }> {
  const out: Array<{ key: string; ns?: string; mount?: CatalogMount }> = [];
  for (const x of c.mounts) {
    const [table, data] = x.path.startsWith('auth/') ? ['core/auth/', 'auth/'] : ['core/mounts/', 'logical/'];
    out.push({ key: table + x.uuid, mount: x }, { key: `${data}${x.uuid}/k`, mount: x });
  }
  for (const ns of c.namespaces) {
    out.push({ key: 'core/namespaces/' + ns.slice(0, -1), ns }, { key: `core/policy/${encodeURIComponent(ns)}/p`, ns });
  }
  out.push({ key: 'core/policy/_root/p', ns: '' }, { key: 'core/audit/x' });
  return out;
}

describe('paths filter properties', () => {
  it('allow F and deny F partition the filterable keys; structural keys are in both', () => {
    fc.assert(
      fc.property(randomCatalog, paths, (c, ps) => {
        const a = keyFilter(allow(...ps), c.mounts);
        const d = keyFilter(deny(...ps), c.mounts);
        const norm = allow(...ps).paths;
        for (const k of keysOf(c)) {
          const inA = a.keyAllowed(k.key);
          const inD = d.keyAllowed(k.key);
          if (k.mount?.local === true) {
            expect([inA, inD]).toEqual([false, false]);
          } else if (k.mount !== undefined) {
            expect(inA).toBe(!inD);
          } else if (k.ns === undefined || k.ns === '') {
            expect([inA, inD]).toEqual([true, true]); // system records and the root namespace
          } else {
            const ns = k.ns;
            const ancestor = norm.some((p) => p !== ns && p.startsWith(ns)) && !norm.some((p) => ns.startsWith(p));
            if (ancestor) expect([inA, inD]).toEqual([true, true]);
            else expect(inA).toBe(!inD);
          }
        }
      }),
    );
  });

  it('adding a path to an allow filter never removes a key; to a deny filter never adds one', () => {
    fc.assert(
      fc.property(randomCatalog, paths, filterPath, (c, ps, extra) => {
        const a0 = keyFilter(allow(...ps), c.mounts);
        const a1 = keyFilter(allow(...ps, extra), c.mounts);
        const d0 = keyFilter(deny(...ps), c.mounts);
        const d1 = keyFilter(deny(...ps, extra), c.mounts);
        for (const { key } of keysOf(c)) {
          if (a0.keyAllowed(key)) expect(a1.keyAllowed(key)).toBe(true);
          if (d1.keyAllowed(key)) expect(d0.keyAllowed(key)).toBe(true);
        }
      }),
    );
  });

  it('the dynamic filter names exactly the mounts and namespaces whose records the predicate refuses', () => {
    fc.assert(
      fc.property(randomCatalog, paths, fc.constantFrom<'allow' | 'deny'>('allow', 'deny'), (c, ps, mode) => {
        const f = parsePathsFilter({ mode, paths: ps });
        const kf = keyFilter(f, c.mounts);
        const dyn = dynamicFilter(f, c);
        for (const x of c.mounts) {
          if (x.local) continue;
          const table = (x.path.startsWith('auth/') ? 'core/auth/' : 'core/mounts/') + x.uuid;
          expect(dyn.dynamic_filtered_mounts.includes(x.namespace + x.path)).toBe(!kf.keyAllowed(table));
        }
        for (const ns of c.namespaces) {
          expect(dyn.dynamic_filtered_namespaces.includes(ns)).toBe(!kf.keyAllowed('core/namespaces/' + ns.slice(0, -1)));
        }
      }),
    );
  });
});

describe('forwardScope: what a forwarded request may name', () => {
  it('is what the secondary holds: a denied or local mount and an absent namespace do not exist', () => {
    const scope = forwardScope(parsePathsFilter({ mode: 'deny', paths: ['team-a', 'kv', 'auth/userpass'] }), catalog);
    const seen = {
      secretData: scope.mount('secret/data/x'),
      secret: scope.mount('secret'),
      kvData: scope.mount('kv/data/x'),
      kvPrefixOnly: scope.mount('kvx/data/x'),
      local: scope.mount('scratch/data/x'),
      userpass: scope.mount('auth/userpass/users/bob'),
      teamA: scope.mount('team-a/secret/data/x'),
      newMount: scope.mount('fresh'),
      newUnderDenied: scope.mount('team-a/fresh'),
      nsRoot: scope.namespace(''),
      nsA: scope.namespace('team-a/'),
      nsAChild: scope.namespace('team-a/child/'),
      nsB: scope.namespace('team-b/'),
    };
    expect(seen).toEqual({
      secretData: true, secret: true, kvData: false, kvPrefixOnly: true, local: false, userpass: false, teamA: false,
      newMount: true, newUnderDenied: false, nsRoot: true, nsA: false, nsAChild: false, nsB: true,
    });
    // Without a filter every replicated mount, but still never the primary's local ones.
    const open = forwardScope(undefined, catalog);
    expect([open.mount('kv/data/x'), open.mount('scratch/data/x'), open.namespace('team-a/')]).toEqual([true, false, true]);
  });

  it('agrees with the key predicate on every mount of a random catalog', () => {
    fc.assert(
      fc.property(randomCatalog, paths, fc.constantFrom<'allow' | 'deny'>('allow', 'deny'), (c, ps, mode) => {
        const f = parsePathsFilter({ mode, paths: ps });
        const kf = keyFilter(f, c.mounts);
        const scope = forwardScope(f, c);
        for (const x of c.mounts) {
          // A nested mount answers for its own paths: judge each by the deepest mount of its path.
          const deepest = c.mounts.filter((y) => (x.namespace + x.path).startsWith(y.namespace + y.path)).sort((a, b) => (b.namespace + b.path).length - (a.namespace + a.path).length)[0];
          if (deepest !== x) continue;
          const table = (x.path.startsWith('auth/') ? 'core/auth/' : 'core/mounts/') + x.uuid;
          expect(scope.mount(`${x.namespace}${x.path}some/key`)).toBe(kf.keyAllowed(table));
        }
      }),
    );
  });
});
