/**
 * Paths filters at rest and the catalog they are judged against, on the real storage engine over
 * the in-memory backend: the filter records are local class, and the pure predicate agrees with
 * the key layout the vault services actually write.
 */
import { isTesseraError } from '../core/errors.js';
import { PAGES, PAGE_BYTES, treeFromPages, valueHash } from '../core/merkle.js';
import { withoutLeaves } from '../core/merkle-filter.js';
import { dynamicFilter, keyFilter, parsePathsFilter } from '../core/paths-filter.js';
import { StorageEngine } from '../storage/engine.js';
import { testCipher } from '../storage/engine.fixtures.js';
import { classify } from '../storage/keyspace.js';
import { MemoryBackend } from '../storage/memory.js';
import { ScopedStore, type Store } from '../storage/store.js';
import { Mounts, storagePrefix } from '../vault/mounts.js';
import { Namespaces } from '../vault/namespaces.js';
import { Policies } from '../vault/policies.js';
import { loadFilterCatalog } from '../vault/filter-catalog.js';
import { PathsFilterStore } from './paths-filter-store.js';

async function open(): Promise<{ engine: StorageEngine; store: Store }> {
  const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 10_000, walMaxBytes: 64 << 20 });
  return { engine, store: engine.secure(testCipher()) };
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isTesseraError(e)) return e.code;
    throw e;
  }
  throw new Error('expected a typed error');
}

describe('PathsFilterStore', () => {
  it('round-trips filters per secondary id in the local class, listed and deletable', async () => {
    const { engine, store } = await open();
    const filters = new PathsFilterStore(() => store);
    await filters.set('east', parsePathsFilter({ mode: 'deny', paths: ['team-a', 'secret/'] }));
    await filters.set('west', parsePathsFilter({ paths: ['kv'] }));
    // Matched as normalised, kept as written (trailing '/' included).
    expect(await filters.get('east')).toEqual({ mode: 'deny', paths: ['team-a/', 'secret/'], given: ['team-a', 'secret/'] });
    expect(await filters.list()).toEqual(['east', 'west']);
    expect([...(await filters.all()).keys()]).toEqual(['east', 'west']);

    // Every key written is local class: a DR secondary receives it, a performance one never.
    const written = (await engine.readWal(1n, 100)).flatMap((e) => e.ops.map((op) => op.key));
    expect(written).toEqual(['local/replication/performance/filters/east', 'local/replication/performance/filters/west']);
    expect(written.every((k) => classify(k) === 'local')).toBe(true);

    await filters.set('east', parsePathsFilter({ mode: 'allow', paths: [] }));
    expect(await filters.get('east')).toEqual({ mode: 'allow', paths: [], given: [] });
    expect(await filters.delete('east')).toBe(true);
    expect(await filters.get('east')).toBeUndefined();
    expect(await filters.list()).toEqual(['west']);
  });

  it('a delete of an absent filter commits nothing and answers false', async () => {
    const { engine, store } = await open();
    const filters = new PathsFilterStore(() => store);
    expect(await filters.delete('nobody')).toBe(false);
    expect(engine.lastGuard().index).toBe(0n);
  });

  it('refuses bad ids and malformed filters with invalid_request and writes nothing', async () => {
    const { engine, store } = await open();
    const filters = new PathsFilterStore(() => store);
    expect(await code(filters.set('../x', parsePathsFilter({})))).toBe('invalid_request');
    expect(await code(filters.set('a/b', parsePathsFilter({})))).toBe('invalid_request');
    expect(await code(filters.set('x'.repeat(129), parsePathsFilter({})))).toBe('invalid_request');
    expect(await code(filters.get(''))).toBe('invalid_request');
    expect(await code(filters.set('east', { mode: 'block' as 'allow', paths: [] }))).toBe('invalid_request');
    expect(await code(filters.set('east', { mode: 'deny', paths: ['a/../b'] }))).toBe('invalid_request');
    expect(engine.lastGuard().index).toBe(0n);
  });

  it('a corrupted record reads as an internal error, not as "no filter"', async () => {
    const { store } = await open();
    await store.commit([{ type: 'put', key: 'local/replication/performance/filters/east', value: Buffer.from('{not json') }]);
    expect(await code(new PathsFilterStore(() => store).get('east'))).toBe('internal');
  });
});

describe('the predicate over the layout the vault services write', () => {
  it('filters every key of a real keyspace: mounts, their data, namespaces, policies, local data', async () => {
    const { engine, store } = await open();
    const mounts = new Mounts(() => store);
    const namespaces = new Namespaces(() => store);
    const policies = new Policies(() => store);
    await namespaces.create('', 'team-a');
    await namespaces.create('team-a/', 'child');
    const secret = await mounts.enable('', 'secret/', { type: 'kv' });
    const teamA = await mounts.enable('team-a/', 'secret/', { type: 'kv' });
    const child = await mounts.enable('team-a/child/', 'db/', { type: 'kv' });
    const scratch = await mounts.enable('', 'scratch/', { type: 'kv', local: true });
    for (const e of [secret, teamA, child, scratch]) await new ScopedStore(store, storagePrefix(e)).commit([{ type: 'put', key: 'data/app', value: Buffer.from('{}') }]);
    await policies.put('', 'ops', 'path "secret/*" { capabilities = ["read"] }');
    await policies.put('team-a/', 'ops', 'path "secret/*" { capabilities = ["read"] }');
    await policies.put('team-a/child/', 'ops', 'path "db/*" { capabilities = ["read"] }');

    const catalog = await loadFilterCatalog(store);
    expect(catalog.namespaces).toEqual(['team-a/', 'team-a/child/']);
    expect(catalog.mounts.map((m) => m.namespace + m.path).sort()).toEqual(['scratch/', 'secret/', 'team-a/child/db/', 'team-a/secret/']);

    const ops = (await engine.readWal(1n, 1000)).flatMap((e) => e.ops);
    const streamed = (f: ReturnType<typeof parsePathsFilter>): string[] => {
      const kf = keyFilter(f, catalog.mounts);
      return ops.filter((op) => kf.opAllowed(op)).map((op) => op.key).sort();
    };
    expect(streamed(parsePathsFilter({ mode: 'deny', paths: ['team-a'] }))).toEqual(
      ['core/mounts/' + secret.uuid, `logical/${secret.uuid}/data/app`, 'core/policy/_root/ops'].sort(),
    );
    expect(streamed(parsePathsFilter({ mode: 'allow', paths: ['team-a/secret'] }))).toEqual(
      ['core/namespaces/team-a', 'core/mounts/' + teamA.uuid, `logical/${teamA.uuid}/data/app`, 'core/policy/_root/ops', 'core/policy/team-a%2F/ops'].sort(),
    );
    expect(dynamicFilter(parsePathsFilter({ mode: 'allow', paths: ['team-a/secret'] }), catalog)).toEqual({
      dynamic_filtered_mounts: ['secret/', 'team-a/child/db/'],
      dynamic_filtered_namespaces: ['team-a/child/'],
    });

    // A mount disabled after the catalog was read: its data deletes still stream, its puts never.
    const before = engine.lastGuard().index;
    await mounts.disable('', 'secret/');
    const fresh = await loadFilterCatalog(store);
    const kf = keyFilter(parsePathsFilter({ mode: 'allow', paths: ['team-a'] }), fresh.mounts);
    const tail = (await engine.readWal(before + 1n, 1000)).flatMap((e) => e.ops);
    const dels = tail.filter((op) => op.type === 'del');
    expect(dels.map((d) => d.key).sort()).toEqual(['core/mounts/' + secret.uuid, `logical/${secret.uuid}/data/app`].sort());
    expect(dels.every((d) => kf.opAllowed(d))).toBe(true);
    expect(kf.opAllowed({ type: 'put', key: `logical/${secret.uuid}/data/app` })).toBe(false);
  });
});

describe('filtered Merkle hashes served from a pinned snapshot', () => {
  it('equal the hashes of an engine that holds only the allowed keys (same ciphertext)', async () => {
    const primary = await open();
    const mounts = new Mounts(() => primary.store);
    const kept = await mounts.enable('', 'kept/', { type: 'kv' });
    const hidden = await mounts.enable('', 'hidden/', { type: 'kv' });
    for (let i = 0; i < 40; i++) {
      for (const e of [kept, hidden]) await new ScopedStore(primary.store, storagePrefix(e)).commit([{ type: 'put', key: `data/k${i}`, value: Buffer.from(`v${i}`) }]);
    }
    const catalog = await loadFilterCatalog(primary.store);
    const kf = keyFilter(parsePathsFilter({ mode: 'deny', paths: ['hidden'] }), catalog.mounts);

    const snap = await primary.engine.snapshot();
    try {
      // The primary's side: the snapshot's tree 1, minus the leaves of denied keys.
      const pages = Array.from({ length: PAGES }, (_, p) => Buffer.concat(snap.subpageHashes(1, p)));
      expect(pages[0]!.length).toBe(PAGE_BYTES);
      const denied = [];
      const allowedOps = [];
      const seen = new Set<string>();
      for (const entry of await primary.engine.readWal(1n, 1000)) {
        for (const op of entry.ops) {
          if (op.type !== 'put' || classify(op.key) !== 'replicated' || seen.has(op.key)) continue;
          seen.add(op.key);
          const ct = await snap.readRaw(op.key);
          if (ct === undefined) continue;
          if (kf.keyAllowed(op.key)) allowedOps.push({ type: 'put' as const, key: op.key, value: ct });
          else denied.push({ key: op.key, valueHash: valueHash(ct) });
        }
      }
      expect(denied.length).toBe(41); // hidden's table entry and its 40 keys
      const filtered = withoutLeaves(treeFromPages(pages), denied);

      // The secondary's side: an engine that received exactly the allowed ciphertexts.
      const secondary = await open();
      await secondary.engine.commitRaw(allowedOps);
      expect(filtered.root.equals(secondary.engine.subtreeRoot(1))).toBe(true);
      expect(filtered.root.equals(snap.subtreeRoot(1))).toBe(false);
    } finally {
      await snap.close();
    }
  });
});
