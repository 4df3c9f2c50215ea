/**
 * The key and value contract (contract.ts) on both engines, LevelDB in a temp dir and a private
 * PostgreSQL 15: the longest key and value commit and read back, one byte more is refused with
 * the same 400 before it joins a batch, and its batch neighbours commit.
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
import { StorageEngine, type EngineOptions } from './engine.js';
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
