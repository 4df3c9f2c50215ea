/**
 * merkle-check on a real LevelDB: the report is consistent upward. Page records lost to log
 * corruption (older records on disk, while data, leaves and root records are current) are listed
 * by page, and their subtree root and the root are reported corrupted in the same report.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TREES, reportIsClean, type CorruptionReport } from '../core/merkle.js';
import { testCipher } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { Keys } from './keyspace.js';
import { openLevelBackend } from './leveldb.js';
import type { Op } from './store.js';

const opts: EngineOptions = { walMaxEntries: 10_000, walMaxBytes: 1 << 30 };
const cipher = testCipher(Buffer.alloc(32, 5));
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-mcheck-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The invariant the report must hold whatever it found. */
function expectConsistent(r: CorruptionReport): void {
  for (const t of TREES) {
    if (r.trees[t].corruptedPages.size > 0) expect(r.trees[t].corruptedSubtreeRoot).toBe(true);
    if (r.trees[t].corruptedSubtreeRoot) expect(r.corruptedRoot).toBe(true);
  }
}

async function pageRecords(backend: Awaited<ReturnType<typeof openLevelBackend>>, tree: 1 | 2): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const prefix = Keys.pagePrefix(tree);
  for await (const [k, v] of backend.iterate({ gte: prefix, lt: `${prefix}\uffff` })) out.set(k, Buffer.from(v));
  return out;
}

test('stale page records of many pages: every one is listed, and the subtree root and root are corrupted too', async () => {
  const path = join(dir, 'db');
  let backend = await openLevelBackend({ path });
  let engine = await StorageEngine.open(backend, opts);
  let store = engine.secure(cipher);
  for (let i = 0; i < 200; i++) await store.commit([put(`a/${i}`, `v${i}`)]);
  await engine.close(); // flushes every page record
  const old = await pageRecords(backend, 1);
  await backend.close();

  backend = await openLevelBackend({ path });
  engine = await StorageEngine.open(backend, opts);
  store = engine.secure(cipher);
  for (let i = 0; i < 200; i++) await store.commit([put(`b/${i}`, `w${i}`)]);
  await engine.close();
  // What a dropped log tail can leave: the newer page records gone, the older ones back, while
  // the data, leaves and root records are current.
  await backend.batch(
    [...(await pageRecords(backend, 1)).keys()].map((k) => {
      const before = old.get(k);
      return before === undefined ? { type: 'del' as const, key: k } : { type: 'put' as const, key: k, value: before };
    }),
    { sync: true },
  );
  await backend.close();

  backend = await openLevelBackend({ path });
  engine = await StorageEngine.open(backend, opts);
  const report = await engine.check();
  expect(report.trees[1].corruptedPages.size).toBeGreaterThan(40);
  expect(report.trees[1].corruptedSubtreeRoot).toBe(true);
  expect(report.corruptedRoot).toBe(true);
  expect(report.trees[2].corruptedPages.size).toBe(0);
  expect(report.trees[2].corruptedSubtreeRoot).toBe(false);
  expectConsistent(report);

  await engine.reindex({ force: true });
  const fixed = await engine.check();
  expect(reportIsClean(fixed)).toBe(true);
  expectConsistent(fixed);
  await engine.close();
  await backend.close();
});
