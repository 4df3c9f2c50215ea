/**
 * The engine's durability tests of engine.level.test.ts on the PostgreSQL Backend (a private
 * PostgreSQL 15, test/support/postgres.ts): reopen keeps data, root, guard and WAL; concurrent
 * commits chain; a secondary on LevelDB applying a PostgreSQL primary's WAL matches it; a
 * refused guard fails the engine closed with nothing written; a batch with one write PostgreSQL
 * refuses for its data commits its neighbours and leaves the engine writable.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqlRows, startPostgres, type TestPostgres } from '../../test/support/postgres.js';
import { locate, reportIsClean } from '../core/merkle.js';
import { genesisGuard, verifyChain } from '../core/wal.js';
import { ControlledBackend, testCipher } from './engine.fixtures.js';
import { expectReopenKeepsEverything } from './engine.reopen.fixtures.js';
import { BatchRefused, WriteRefused, type Backend } from './backend.js';
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

  it('a guard that refuses rejects the commit with BatchRefused, writes nothing of it, and does not fail the engine', async () => {
    let allow = true;
    const table = `engine_${++tables}`;
    const b = await postgres(table, async () => allow || { refused: 'fenced: not the lease holder' });
    const e = await StorageEngine.open(b, opts);
    const s = e.secure(cipher);
    await s.commit([put('before', '1')]);
    const root = e.merkleRoot();
    const guard = e.lastGuard();
    allow = false;
    const refused = await s.commit([put('after', '2')]).catch((x: unknown) => x);
    expect(refused).toBeInstanceOf(BatchRefused);
    expect((refused as BatchRefused).message).toContain('nothing was written: fenced: not the lease holder');
    // Not a storage fault: memory still matches storage, and the engine writes again once allowed.
    expect(e.failure()).toBeUndefined();
    expect(e.merkleRoot()).toEqual(root);
    expect(e.lastGuard()).toEqual(guard);
    expect(await s.get('after')).toBeUndefined();
    allow = true;
    await s.commit([put('later', '3')]);
    await e.close();
    const reopened = await StorageEngine.open(await postgres(table), opts);
    expect(reopened.lastGuard().index).toBe(guard.index + 1n);
    expect(await reopened.secure(cipher).get('after')).toBeUndefined();
    expect((await reopened.secure(cipher).get('before'))?.toString()).toBe('1');
    expect((await reopened.secure(cipher).get('later'))?.toString()).toBe('3');
    await reopened.close();
  });

  it('a batch holding one write PostgreSQL refuses for its data commits every other write of it; the engine stays writable', async () => {
    const table = `engine_${++tables}`;
    const b = new ControlledBackend(await postgres(table));
    const e = await StorageEngine.open(b, opts);
    // A refusal the contract check does not catch: the table itself refuses keys under refused/
    // (a check violation, SQLSTATE 23514), as it refused a key too long for its index before.
    await sqlRows(server.url, `ALTER TABLE ${table} ADD CONSTRAINT no_refused CHECK (position(convert_to('refused/', 'UTF8') in key) = 0)`);
    const raw = (key: string, value: string): Promise<void> => e.commitRaw([{ type: 'put', key, value: Buffer.from(value) }]);
    // The first batch is held, so the next four writes queue and share the second batch.
    const gate = b.hold();
    const first = raw('first', '0');
    const queued = [raw('good/1', '1'), raw('refused/1', 'x'), raw('good/2', '2'), raw('good/3', '3')];
    gate.release();
    await first;
    const results = await Promise.allSettled(queued);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const refused = (results[1] as PromiseRejectedResult).reason as WriteRefused;
    expect(refused).toBeInstanceOf(WriteRefused);
    expect(refused.code).toBe('invalid_request');
    expect(refused.message).toContain('violates check constraint "no_refused"');
    // The shared batch, then each write alone.
    expect(b.batchCalls).toBe(2 + 4);
    expect(e.failure()).toBeUndefined();
    await raw('good/4', '4');
    const wal = await e.readWal(1n, 100);
    expect(wal.map((x) => x.ops[0]?.key)).toEqual(['first', 'good/1', 'good/2', 'good/3', 'good/4']);
    verifyChain(genesisGuard(), wal);
    const root = e.merkleRoot();
    await e.close();
    const reopened = await StorageEngine.open(await postgres(table), opts);
    expect(reopened.merkleRoot()).toEqual(root);
    expect(await reopened.readRaw('refused/1')).toBeUndefined();
    expect((await reopened.readRaw('good/3'))?.toString()).toBe('3');
    await reopened.close();
  });

  it('reload() reads what another writer committed; a standby refuses writes and reads past its cache', async () => {
    const table = `engine_${++tables}`;
    const a = await StorageEngine.open(await postgres(table), { ...opts, settlesOnReload: true });
    const other = await StorageEngine.open(await postgres(table), opts);
    await a.secure(cipher).commit([put('mine', '1')]);
    // From the entries since, verified against the roots PostgreSQL holds (catch-up.ts).
    expect(await other.reload()).toEqual({ from: 'catch-up', entries: 1, subpages: 1 });
    await other.secure(cipher).commit([put('theirs', '2')]);
    expect(await a.reload()).toEqual({ from: 'catch-up', entries: 1, subpages: 1 });
    expect(a.lastGuard()).toEqual(other.lastGuard());
    expect(a.merkleRoot()).toEqual(other.merkleRoot());
    expect((await a.secure(cipher).get('theirs'))?.toString()).toBe('2');
    // A standby refuses writes before storage, and reads past its cache.
    a.standby(() => new Error('standby: nothing was written'));
    await expect(a.secure(cipher).commit([put('x', '1')])).rejects.toThrow('standby: nothing was written');
    await other.secure(cipher).commit([put('mine', 'changed')]);
    expect((await a.secure(cipher).get('mine'))?.toString()).toBe('changed');
    a.standby(undefined);
    await a.close();
    await other.close();
  });
});
