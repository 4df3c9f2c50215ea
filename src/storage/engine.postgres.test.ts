/**
 * The engine's durability tests of engine.level.test.ts on the PostgreSQL Backend (a private
 * PostgreSQL 15, test/support/postgres.ts): reopen keeps data, root, guard and WAL; concurrent
 * commits chain; a secondary on LevelDB applying a PostgreSQL primary's WAL matches it; a
 * refused guard fails the engine closed with nothing written.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres, type TestPostgres } from '../../test/support/postgres.js';
import { locate, reportIsClean } from '../core/merkle.js';
import { genesisGuard, verifyChain } from '../core/wal.js';
import type { Backend } from './backend.js';
import { ControlledBackend, testCipher } from './engine.fixtures.js';
import { expectReopenKeepsEverything } from './engine.reopen.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { Keys } from './keyspace.js';
import { openLevelBackend } from './leveldb.js';
import { openPostgresBackend, type BatchGuard } from './postgres.js';
import type { Op } from './store.js';

const opts: EngineOptions = { walMaxEntries: 1000, walMaxBytes: 1 << 30 };
const cipher = testCipher(Buffer.alloc(32, 3));
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });

let server: TestPostgres;
let tables = 0;
const open: Backend[] = [];
beforeAll(async () => {
  server = await startPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});
afterEach(async () => {
  for (const b of open.splice(0)) await b.close().catch(() => undefined);
});

async function postgres(table: string, guard?: BatchGuard): Promise<Backend> {
  const b = await openPostgresBackend({ connectionUrl: server.url, table, ...(guard ? { guard } : {}) });
  open.push(b);
  return b;
}

describe('StorageEngine on PostgreSQL', () => {
  it('keeps data, root, guard and WAL across a close and reopen', async () => {
    const table = `engine_${++tables}`;
    await expectReopenKeepsEverything({ open: () => postgres(table), close: (b) => b.close() });
  });

  it('16 concurrent commits share transactions; the WAL is 1..16 and chained', async () => {
    const b = new ControlledBackend(await postgres(`engine_${++tables}`));
    const e = await StorageEngine.open(b, opts);
    const s = e.secure(cipher);
    await Promise.all(Array.from({ length: 16 }, (_, i) => s.commit([put(`k/${i}`, 'v')])));
    expect(b.batchCalls).toBeLessThanOrEqual(2);
    const entries = await e.readWal(1n, 100);
    expect(entries.map((x) => x.index)).toEqual(Array.from({ length: 16 }, (_, i) => BigInt(i + 1)));
    verifyChain(genesisGuard(), entries);
    await e.close();
  });

  it('a LevelDB secondary applying a PostgreSQL primary WAL matches it; corruption in PostgreSQL is found and repaired', async () => {
    const pb = await postgres(`engine_${++tables}`);
    const p = await StorageEngine.open(pb, opts);
    const ps = p.secure(cipher);
    for (let i = 0; i < 20; i++) await ps.commit([put(`a/${i}`, `${i}`), put(`local/${i % 3}`, `${i}`)]);
    const dir = await mkdtemp(join(tmpdir(), 'tessera-engine-pg-'));
    try {
      const sb = await openLevelBackend({ path: join(dir, 's') });
      const s = await StorageEngine.open(sb, opts);
      await s.applyEntries(await p.readWal(1n, 7));
      await s.applyEntries(await p.readWal(8n, 100));
      expect(s.merkleRoot()).toEqual(p.merkleRoot());
      await s.close();
      await sb.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    // Closed, the engine has flushed its Merkle pages to the table.
    const root = p.merkleRoot();
    await p.close();
    const { page, subpage } = locate('a/5');
    const rec = (await pb.get(Keys.page(1, page)))!;
    rec[subpage * 32 + 1] = (rec[subpage * 32 + 1] ?? 0) ^ 0x10;
    await pb.batch([{ type: 'put', key: Keys.page(1, page), value: rec }], { sync: true });
    const p2 = await StorageEngine.open(pb, opts);
    expect((await p2.check()).trees[1].corruptedPages.get(page)?.subpages).toEqual([subpage]);
    await p2.reindex({});
    expect(reportIsClean(await p2.check())).toBe(true);
    expect(p2.merkleRoot()).toEqual(root);
    await p2.close();
  });

  it('a guard that refuses fails the commit and the engine closed, with nothing of it written', async () => {
    let allow = true;
    const table = `engine_${++tables}`;
    const b = await postgres(table, async () => allow || { refused: 'fenced: not the lease holder' });
    const e = await StorageEngine.open(b, opts);
    const s = e.secure(cipher);
    await s.commit([put('before', '1')]);
    const root = e.merkleRoot();
    allow = false;
    await expect(s.commit([put('after', '2')])).rejects.toThrow();
    expect(e.failure()).toBeDefined();
    allow = true;
    await e.close().catch(() => undefined);
    const reopened = await StorageEngine.open(await postgres(table), opts);
    expect(reopened.merkleRoot()).toEqual(root);
    expect(await reopened.secure(cipher).get('after')).toBeUndefined();
    expect((await reopened.secure(cipher).get('before'))?.toString()).toBe('1');
    await reopened.close();
  });
});
