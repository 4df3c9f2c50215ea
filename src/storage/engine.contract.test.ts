/**
 * The key and value contract (contract.ts) on both engines, LevelDB in a temp dir and a private
 * PostgreSQL 15: the longest key and value commit and read back, one byte more is refused with
 * the same 400 before it joins a batch, and its batch neighbours commit; a secondary on either
 * engine applies what a primary on either engine holds, by streaming (applyEntries) and by a
 * Merkle sync (installChunk / installSnapshot), including a key longer than the contract written
 * before it existed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres, type TestPostgres } from '../../test/support/postgres.js';
import { ErrorCode, TesseraError } from '../core/errors.js';
import type { WalOp } from '../core/wal.js';
import type { Backend } from './backend.js';
import { KeyTooLarge, MAX_KEY_BYTES, MAX_VALUE_BYTES, ValueTooLarge } from './contract.js';
import { rootFromData } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { Keys } from './keyspace.js';
import { openLevelBackend } from './leveldb.js';
import { openPostgresBackend } from './postgres.js';

type Engine = 'leveldb' | 'postgresql';
const ENGINES: readonly Engine[] = ['leveldb', 'postgresql'];
const opts: EngineOptions = { walMaxEntries: 1000, walMaxBytes: 1 << 30 };

/** A key of exactly `bytes` UTF-8 bytes that no compressor shrinks (random letters and digits). */
function longKey(prefix: string, bytes: number): string {
  return prefix + randomBytes(bytes).toString('base64url').slice(0, bytes - prefix.length);
}
const putOp = (key: string, value: Buffer): WalOp => ({ type: 'put', key, value });

let server: TestPostgres;
let dir: string;
let made = 0;
const open: Backend[] = [];
beforeAll(async () => {
  server = await startPostgres();
  dir = await mkdtemp(join(tmpdir(), 'tessera-contract-'));
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const b of open.splice(0)) await b.close().catch(() => undefined);
});

async function backendOn(engine: Engine): Promise<Backend> {
  const n = ++made;
  const b = engine === 'leveldb' ? await openLevelBackend({ path: join(dir, `db_${n}`) }) : await openPostgresBackend({ connectionUrl: server.url, table: `contract_${n}` });
  open.push(b);
  return b;
}

async function refusal(p: Promise<unknown>): Promise<{ status: string; message: string; type: string }> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  if (!(e instanceof TesseraError)) throw new Error(`expected a refusal, got ${String(e)}`);
  return { status: e.code, message: e.message, type: e.constructor.name };
}

describe.each(ENGINES.map((e) => [e]))('the key and value contract on %s', (engine) => {
  it('takes the longest key and value; one byte more of either is refused with the same 400, and batch neighbours commit', async () => {
    const e = await StorageEngine.open(await backendOn(engine), opts);
    const key = longKey('kv/', MAX_KEY_BYTES);
    const value = randomBytes(MAX_VALUE_BYTES);
    await e.commitRaw([putOp(key, value)]);
    expect((await e.readRaw(key))?.equals(value)).toBe(true);

    // Concurrent writes share a batch: the refused ones fail before it, the others commit.
    const tooLongKey = longKey('kv/', MAX_KEY_BYTES + 1);
    const results = await Promise.allSettled([
      e.commitRaw([putOp('kv/good/1', Buffer.from('1'))]),
      e.commitRaw([putOp(tooLongKey, Buffer.from('x'))]),
      e.commitRaw([putOp('kv/too-big', Buffer.alloc(MAX_VALUE_BYTES + 1))]),
      e.commitRaw([putOp('kv/good/2', Buffer.from('2'))]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    const [, k, v] = results as PromiseRejectedResult[];
    expect(k?.reason).toBeInstanceOf(KeyTooLarge);
    expect(v?.reason).toBeInstanceOf(ValueTooLarge);
    expect(await refusal(e.commitRaw([putOp(tooLongKey, Buffer.from('x'))]))).toEqual({
      status: ErrorCode.invalidRequest,
      type: 'KeyTooLarge',
      message: `put failed due to key being too large; got ${MAX_KEY_BYTES + 1} bytes, max: ${MAX_KEY_BYTES} bytes`,
    });
    expect(await refusal(e.commitRaw([putOp('kv/too-big', Buffer.alloc(MAX_VALUE_BYTES + 1))]))).toEqual({
      status: ErrorCode.invalidRequest,
      type: 'ValueTooLarge',
      message: `put failed due to value being too large; got ${MAX_VALUE_BYTES + 1} bytes, max: ${MAX_VALUE_BYTES} bytes`,
    });
    expect(e.failure()).toBeUndefined();
    expect(await e.readRaw(tooLongKey)).toBeUndefined();
    expect((await e.readRaw('kv/good/2'))?.toString()).toBe('2');
    // A key longer than the contract may always be deleted (one stored before it existed).
    await e.commitRaw([{ type: 'del', key: tooLongKey }]);
    expect((await e.readWal(1n, 10)).map((x) => x.ops.map((op) => op.key))).toEqual([[key], ['kv/good/1'], ['kv/good/2'], [tooLongKey]]);
    await e.close();
  });
});

describe.each([
  ['leveldb', 'postgresql'],
  ['postgresql', 'leveldb'],
] as Array<[Engine, Engine]>)('a %s primary and a %s secondary', (primaryEngine, secondaryEngine) => {
  /**
   * A primary holding the longest key and value the contract allows, a key of 9,000 bytes stored
   * before the contract existed (written here with the contract raised), and ordinary keys.
   */
  async function primaryWithLongKeys(): Promise<{ p: StorageEngine; pb: Backend; keys: string[] }> {
    const pb = await backendOn(primaryEngine);
    const p = await StorageEngine.open(pb, { ...opts, limits: { maxKeyBytes: 1 << 20, maxValueBytes: MAX_VALUE_BYTES } });
    const keys = [longKey('longest/', MAX_KEY_BYTES), longKey('legacy/', 9_000), longKey('local/legacy/', 3_000)];
    await p.commitRaw([putOp(keys[0] as string, randomBytes(MAX_VALUE_BYTES))]);
    await p.commitRaw([putOp(keys[1] as string, randomBytes(100)), putOp('short/1', Buffer.from('1'))]);
    await p.commitRaw([putOp(keys[2] as string, randomBytes(100)), putOp(`${keys[1]}/child`, Buffer.from('c'))]);
    return { p, pb, keys };
  }

  it('streaming applies every entry, and the secondary matches the primary', async () => {
    const { p, keys } = await primaryWithLongKeys();
    const s = await StorageEngine.open(await backendOn(secondaryEngine), opts);
    await s.applyEntries(await p.readWal(1n, 1));
    await s.applyEntries(await p.readWal(2n, 100));
    expect(s.lastGuard()).toEqual(p.lastGuard());
    expect(s.merkleRoot()).toEqual(p.merkleRoot());
    for (const k of keys) expect((await s.readRaw(k))?.equals((await p.readRaw(k)) as Buffer)).toBe(true);
    expect(await s.listKeys('')).toEqual(await p.listKeys(''));
    // The secondary, promoted, deletes what its primary stored before the contract.
    await s.commitRaw([{ type: 'del', key: keys[1] as string }]);
    expect(await s.readRaw(keys[1] as string)).toBeUndefined();
    await s.close();
    await p.close();
  });

  it('a Merkle sync (what an activation runs) installs every key, and the roots match the data', async () => {
    const { p, pb, keys } = await primaryWithLongKeys();
    const sb = await backendOn(secondaryEngine);
    const s = await StorageEngine.open(sb, opts);
    await s.commitRaw([putOp('stale/only-here', Buffer.from('x'))]);
    // What merkle-sync sends: the primary's stored ciphertext of every key (the primary is idle).
    const ops: WalOp[] = [];
    for await (const [k, v] of pb.iterate({ gte: Keys.valuePrefix, lt: 'v0' })) ops.push(putOp(Keys.logicalOf(k), v));
    await s.installChunk([{ type: 'del', key: 'stale/only-here' }, ...ops.slice(0, 2)]);
    await s.installSnapshot(ops.slice(2), p.lastGuard());
    expect(s.merkleRoot()).toEqual(p.merkleRoot());
    expect(await rootFromData(sb)).toEqual(p.merkleRoot());
    for (const k of keys) expect((await s.readRaw(k))?.equals((await p.readRaw(k)) as Buffer)).toBe(true);
    await s.close();
    await p.close();
  });
});
