/** LevelDB Backend: the shared contract, plus durability, locking and iterator release. */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jest } from '@jest/globals';
import { ClassicLevel } from 'classic-level';
import { runBackendContract } from '../../test/storage/backend-contract.js';
import { ErrorCode, Internal, isTesseraError } from '../core/errors.js';
import { prefixEnd } from './backend.js';
import { openLevelBackend, StorageLocked } from './leveldb.js';
import type { LevelBackend } from './leveldb.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'tessera-leveldb-'));
}

const put = (key: string, value: string | Buffer) =>
  ({ type: 'put', key, value: typeof value === 'string' ? Buffer.from(value) : value }) as const;

/** Polls `cond` until true or the deadline passes (then fails with `what`). */
async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

runBackendContract('leveldb', async () => {
  const dir = await tempDir();
  // A nested, not-yet-existing path: opening must create it.
  const backend = await openLevelBackend({ path: join(dir, 'nested', 'db') });
  return {
    backend,
    cleanup: async () => {
      await backend.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('LevelDB backend', () => {
  let dir: string;
  const opened: LevelBackend[] = [];

  beforeEach(async () => {
    dir = await tempDir();
  });

  afterEach(async () => {
    for (const b of opened.splice(0)) await b.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function open(path = join(dir, 'db')): Promise<LevelBackend> {
    const b = await openLevelBackend({ path });
    opened.push(b);
    return b;
  }

  it('makes the directory 0700 and its files 0600, also those an earlier open left 0755/0644', async () => {
    const dir = await tempDir();
    try {
      const path = join(dir, 'db');
      await mkdir(path, { mode: 0o755 });
      await chmod(path, 0o755);
      await writeFile(join(path, 'LOG.old'), 'x', { mode: 0o644 });
      await chmod(join(path, 'LOG.old'), 0o644);
      const b = await openLevelBackend({ path });
      await b.batch([put('k', 'v')], { sync: true });
      await b.close();
      expect((await stat(path)).mode & 0o777).toBe(0o700);
      const files = await readdir(path);
      expect(files).toEqual(expect.arrayContaining(['CURRENT', 'LOG.old']));
      for (const f of files) expect([f, (await stat(join(path, f))).mode & 0o777]).toEqual([f, 0o600]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps synced and unsynced writes across close and reopen', async () => {
    const path = join(dir, 'db');
    const first = await openLevelBackend({ path });
    await first.batch([put('synced', 'a'), put('gone', 'x')], { sync: true });
    await first.batch([put('unsynced', 'b'), { type: 'del', key: 'gone' }], { sync: false });
    await first.close();

    const again = await open(path);
    expect(again.path).toBe(path);
    expect((await again.get('synced'))?.toString()).toBe('a');
    expect((await again.get('unsynced'))?.toString()).toBe('b');
    expect(await again.get('gone')).toBeUndefined();
  });

  it('rejects a second open of a directory that is open, with a typed error naming the path', async () => {
    const path = join(dir, 'db');
    await open(path);
    const err: unknown = await openLevelBackend({ path }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StorageLocked);
    expect(isTesseraError(err) && err.code).toBe(ErrorCode.internal);
    expect((err as StorageLocked).message).toContain(path);
    expect((err as StorageLocked).path).toBe(path);

    // Once the holder closes, the directory opens again.
    await opened.pop()?.close();
    const next = await open(path);
    expect(await next.get('x')).toBeUndefined();
  });

  it('reports an unusable path as Internal naming the path, not as a lock', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'not a directory');
    const err: unknown = await openLevelBackend({ path: join(file, 'db') }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Internal);
    expect(err).not.toBeInstanceOf(StorageLocked);
    expect((err as Internal).message).toContain(join(file, 'db'));
  });

  it('says why LevelDB cannot open a directory: its own reason and the last lines of its LOG', async () => {
    const path = join(dir, 'db');
    const db = await open(path);
    await db.batch([{ type: 'put', key: 'k', value: Buffer.from('v') }], { sync: true });
    await opened.pop()?.close();
    // Recovery must write the logged batch into a new table, and cannot (as on a full disk): each
    // name the table could take is a directory.
    const files = await readdir(path);
    for (let n = 1; n < 64; n++) {
      const name = `${String(n).padStart(6, '0')}.ldb`;
      if (!files.some((f) => f.startsWith(String(n).padStart(6, '0')))) await mkdir(join(path, name));
    }
    const err: unknown = await openLevelBackend({ path }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Internal);
    const message = (err as Internal).message;
    expect(message).toContain(`cannot open storage directory ${path}: `);
    expect(message).toMatch(/IO error: .*\.ldb: Is a directory/);
    expect(message).toContain(`last lines of LevelDB's LOG (${join(path, 'LOG')}):`);
    expect(message).toMatch(/Level-0 table #\d+: .*Is a directory/);
  });

  it('releases the LevelDB iterator when a consumer breaks early (backend and snapshot)', async () => {
    const b = await open();
    await b.batch(Array.from({ length: 20 }, (_, i) => put(`k${String(i).padStart(2, '0')}`, 'v')), {
      sync: false,
    });
    const snap = await b.snapshot();
    try {
      for (const view of [b, snap]) {
        let n = 0;
        for await (const _ of view.iterate({ gte: 'k' })) {
          expect(b.openIterators()).toBe(1);
          if (++n === 2) break;
        }
        expect(n).toBe(2);
        expect(b.openIterators()).toBe(0);
      }
      // Exhausting a range releases it too.
      for await (const _ of b.iterate({ gte: 'k', lt: prefixEnd('k') })) expect(b.openIterators()).toBe(1);
      expect(b.openIterators()).toBe(0);
    } finally {
      await snap.close();
    }
  });

  it('iterates across its growing pull batches (16, 64, 256, then 256 each) in order, with bounds, limit, reverse, a snapshot and a break in a later batch', async () => {
    const b = await open();
    const keys = Array.from({ length: 700 }, (_, i) => `p/${String(i).padStart(4, '0')}`);
    await b.batch([...keys.map((k) => put(k, k)), put('q/after', 'x'), put('o/before', 'x')], { sync: false });
    const snap = await b.snapshot();
    await b.batch([put('p/0699', 'changed'), put('p/9999', 'later')], { sync: false });
    try {
      const all = async (view: typeof b | typeof snap, range: Parameters<typeof b.iterate>[0]) => {
        const out: Array<[string, string]> = [];
        for await (const [k, v] of view.iterate(range)) out.push([k, v.toString('utf8')]);
        return out;
      };
      // Past every batch edge (16, 80, 336, 592): every key once, in order, values intact.
      expect(await all(snap, { gte: 'p/', lt: prefixEnd('p/') })).toEqual(keys.map((k) => [k, k]));
      expect((await all(b, { gte: 'p/', lt: prefixEnd('p/') })).slice(-2)).toEqual([['p/0699', 'changed'], ['p/9999', 'later']]);
      expect((await all(snap, { gt: 'p/0015', lte: 'p/0080' })).map(([k]) => k)).toEqual(keys.slice(16, 81));
      expect((await all(snap, { gte: 'p/', lt: prefixEnd('p/'), limit: 100 })).map(([k]) => k)).toEqual(keys.slice(0, 100));
      expect((await all(snap, { gte: 'p/', lt: prefixEnd('p/'), reverse: true })).map(([k]) => k)).toEqual([...keys].reverse());
      let n = 0;
      for await (const _ of snap.iterate({ gte: 'p/' })) if (++n === 300) break;
      expect(b.openIterators()).toBe(0);
    } finally {
      await snap.close();
    }
  });

  it('asks LevelDB for at most 256 entries a pull, 16 first: a short scan never makes classic-level reserve room for 1,000', async () => {
    const b = await open();
    await b.batch(Array.from({ length: 700 }, (_, i) => put(`p/${String(i).padStart(4, '0')}`, 'v')), { sync: false });
    // classic-level's iterator class, reached through an iterator of another database: every
    // native pull of `iterate` goes through its _nextv, with the batch size it asks for.
    const other = new ClassicLevel<string, Buffer>(join(dir, 'other'), { valueEncoding: 'buffer' });
    await other.open();
    const proto = Object.getPrototypeOf(other.iterator()) as { _nextv(size: number, options: unknown): Promise<unknown[]> };
    await other.close();
    const pulls = jest.spyOn(proto, '_nextv');
    try {
      let n = 0;
      for await (const _ of b.iterate({ gte: 'p/', lt: prefixEnd('p/') })) n++;
      expect(n).toBe(700);
      // 16 + 64 + 256 + 256 + 108 entries, then the empty pull that ends it.
      expect(pulls.mock.calls.map(([size]) => size)).toEqual([16, 64, 256, 256, 256, 256]);
      pulls.mockClear();
      for await (const _ of b.iterate({ gte: 'p/0010', lt: 'p/0020' })) n++;
      expect(pulls.mock.calls.map(([size]) => size)).toEqual([16, 64]);
    } finally {
      pulls.mockRestore();
    }
  });

  it('answers gets issued together, each with its own value, and later gets see every completed batch', async () => {
    const b = await open();
    await b.batch(Array.from({ length: 50 }, (_, i) => put(`g/${i}`, `v${i}`)), { sync: false });
    const got = await Promise.all(Array.from({ length: 60 }, (_, i) => b.get(`g/${i}`)));
    expect(got.map((v) => v?.toString())).toEqual(Array.from({ length: 60 }, (_, i) => (i < 50 ? `v${i}` : undefined)));
    const snap = await b.snapshot();
    try {
      for (let round = 0; round < 20; round++) {
        const reads = Promise.all([b.get('counter'), b.get('g/0')]);
        await b.batch([put('counter', String(round)), { type: 'del', key: 'g/0' }], { sync: round % 2 === 0 });
        const [before] = await reads; // asked for before the batch: the old value or the new one
        expect([String(round - 1), String(round)]).toContain(before?.toString() ?? '-1');
        expect((await b.get('counter'))?.toString()).toBe(String(round));
        expect(await b.get('g/0')).toBeUndefined();
      }
      // A snapshot's gets are not moved by later batches.
      expect(await snap.get('counter')).toBeUndefined();
      expect((await snap.get('g/0'))?.toString()).toBe('v0');
    } finally {
      await snap.close();
    }
  });

  it('refuses a batch once closed, with Internal', async () => {
    const b = await openLevelBackend({ path: join(dir, 'closing') });
    await b.close();
    await expect(b.batch([put('k', 'v')], { sync: true })).rejects.toBeInstanceOf(Internal);
    await expect(b.get('k')).rejects.toBeInstanceOf(Internal);
  });

  it('estimates on-disk size per range', async () => {
    const path = join(dir, 'db');
    const first = await openLevelBackend({ path });
    // Random (incompressible) 1 KB values; reopening flushes the log into a table file.
    await first.batch(
      Array.from({ length: 1000 }, (_, i) => put(`big/${String(i).padStart(4, '0')}`, randomBytes(1024))),
      { sync: true },
    );
    await first.close();
    const b = await open(path);
    expect(await b.approximateSize('big/', prefixEnd('big/'))).toBeGreaterThan(500_000);
    expect(await b.approximateSize('small/', prefixEnd('small/'))).toBe(0);
  });

  it('keeps every batch a SIGKILLed writer acknowledged, each batch whole; the lock holds across processes', async () => {
    const path = join(dir, 'db');
    const total = 200;
    // The child writes two-key batches with sync:true and prints "ack i" only after each resolves.
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        import { ClassicLevel } from 'classic-level';
        const db = new ClassicLevel(process.env.DB_PATH, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
        await db.open();
        process.stdout.write('open\\n');
        for (let i = 0; i < ${total}; i++) {
          const k = String(i).padStart(4, '0');
          await db.batch([
            { type: 'put', key: 'b/' + k + '/x', value: Buffer.alloc(512, i % 256) },
            { type: 'put', key: 'b/' + k + '/y', value: Buffer.from(k) },
          ], { sync: true });
          process.stdout.write('ack ' + i + '\\n');
        }
        process.stdout.write('done\\n');
        setInterval(() => {}, 1000); // hold the db open until killed
        `,
      ],
      { cwd: repoRoot, env: { ...process.env, DB_PATH: path }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let errOut = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (errOut += d));
    const exited = new Promise<NodeJS.Signals | null>((res) => child.on('exit', (_code, sig) => res(sig)));
    const closed = new Promise<void>((res) => child.on('close', () => res()));
    const acks = (): number[] =>
      out
        .split('\n')
        .filter((l) => l.startsWith('ack '))
        .map((l) => Number(l.slice(4)));

    try {
      await until(() => out.includes('open\n') || errOut !== '', 'child to open the db');
      expect(errOut).toBe('');
      await expect(openLevelBackend({ path })).rejects.toBeInstanceOf(StorageLocked);

      await until(() => acks().length >= 50, 'child acknowledgements');
    } finally {
      child.kill('SIGKILL');
    }
    expect(await exited).toBe('SIGKILL');
    await closed; // stdout drained: every line the child printed is in `out`
    const acked = acks();
    expect(acked.length).toBeGreaterThanOrEqual(50);

    const b = await open(path);
    const keys: string[] = [];
    for await (const [k] of b.iterate({ gte: 'b/', lt: prefixEnd('b/') })) keys.push(k);
    const present = new Map<number, number>();
    for (const k of keys) {
      const i = Number(k.split('/')[1]);
      present.set(i, (present.get(i) ?? 0) + 1);
    }
    for (const i of acked) expect(present.get(i)).toBe(2);
    for (const [, n] of present) expect(n).toBe(2);
    // Batches are sequential, so what survived is a prefix 0..m covering every ack.
    const ids = [...present.keys()].sort((a, b) => a - b);
    expect(ids).toEqual(ids.map((_, i) => i));
    expect(ids.length).toBeGreaterThanOrEqual(Math.max(...acked) + 1);
    expect(ids.length).toBeLessThanOrEqual(total);
    expect((await b.get('b/0000/y'))?.toString()).toBe('0000');
  });
});
