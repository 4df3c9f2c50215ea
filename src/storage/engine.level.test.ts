/** The engine's durability tests on a real LevelDB in a temp dir, including a SIGKILLed writer. */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { locate, reportIsClean } from '../core/merkle.js';
import { genesisGuard, verifyChain } from '../core/wal.js';
import { ControlledBackend, rootFromData, testCipher } from './engine.fixtures.js';
import { expectReopenKeepsEverything } from './engine.reopen.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { Keys } from './keyspace.js';
import { openLevelBackend, type LevelBackend } from './leveldb.js';
import type { Op } from './store.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const opts: EngineOptions = { walMaxEntries: 1000, walMaxBytes: 1 << 30 };
const cipher = testCipher(Buffer.alloc(32, 3));
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });

let dir: string;
const open: LevelBackend[] = [];
async function level(name: string): Promise<LevelBackend> {
  const b = await openLevelBackend({ path: join(dir, name) });
  open.push(b);
  return b;
}
async function closeAll(): Promise<void> {
  for (const b of open.splice(0)) await b.close().catch(() => undefined);
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-engine-'));
});
afterEach(async () => {
  await closeAll();
  await rm(dir, { recursive: true, force: true });
});

describe('StorageEngine on LevelDB', () => {
  it('keeps data, root, guard and WAL across a close and reopen, and leaks no iterators', async () => {
    await expectReopenKeepsEverything({ open: () => level('db'), close: closeAll, afterWrites: (b) => expect(b.openIterators()).toBe(0) });
  });

  it('16 concurrent commits share fsyncs; the WAL is 1..16 and chained', async () => {
    const b = new ControlledBackend(await level('db'));
    const e = await StorageEngine.open(b, opts);
    const s = e.secure(cipher);
    await Promise.all(Array.from({ length: 16 }, (_, i) => s.commit([put(`k/${i}`, 'v')])));
    expect(b.batchCalls).toBeLessThanOrEqual(2);
    const entries = await e.readWal(1n, 100);
    expect(entries.map((x) => x.index)).toEqual(Array.from({ length: 16 }, (_, i) => BigInt(i + 1)));
    verifyChain(genesisGuard(), entries);
  });

  it('a secondary applying the primary WAL matches it, also after its own reopen; corruption is found and repaired', async () => {
    const p = await StorageEngine.open(await level('p'), opts);
    const ps = p.secure(cipher);
    for (let i = 0; i < 20; i++) await ps.commit([put(`a/${i}`, `${i}`), put(`local/${i % 3}`, `${i}`)]);
    const sb = await level('s');
    const s = await StorageEngine.open(sb, opts);
    await s.applyEntries(await p.readWal(1n, 7));
    await s.applyEntries(await p.readWal(8n, 100));
    expect(s.merkleRoot()).toEqual(p.merkleRoot());
    await s.close();
    await sb.close();
    const sb2 = await level('s');
    const s2 = await StorageEngine.open(sb2, opts);
    expect(s2.lastGuard()).toEqual(p.lastGuard());
    expect(s2.merkleRoot()).toEqual(p.merkleRoot());

    const { page, subpage } = locate('a/5');
    const rec = (await sb2.get(Keys.page(1, page)))!;
    rec[subpage * 32 + 1] = (rec[subpage * 32 + 1] ?? 0) ^ 0x10;
    await sb2.batch([{ type: 'put', key: Keys.page(1, page), value: rec }], { sync: true });
    expect((await s2.check()).trees[1].corruptedPages.get(page)?.subpages).toEqual([subpage]);
    await s2.reindex({});
    expect(reportIsClean(await s2.check())).toBe(true);
    expect(sb2.openIterators()).toBe(0);
  });

  it('after SIGKILL mid-commit, every acknowledged txn is there and the index and WAL are consistent', async () => {
    const build = join(dir, 'build');
    await transpile(build);
    const path = join(dir, 'crash');
    const child = spawn(process.execPath, [join(build, 'child.mjs')], {
      cwd: build,
      env: { ...process.env, DB_PATH: path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let errOut = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (errOut += d));
    const closed = new Promise<void>((res) => child.on('close', () => res()));
    const acks = (): number[] => out.split('\n').filter((l) => l.startsWith('ack ')).map((l) => Number(l.slice(4)));
    try {
      await until(() => acks().length >= 150 || errOut !== '', 'child acknowledgements');
      expect(errOut).toBe('');
    } finally {
      child.kill('SIGKILL');
    }
    await closed;
    const acked = acks();

    const b = await level('crash');
    const e = await StorageEngine.open(b, { walMaxEntries: 50, walMaxBytes: 1 << 30 });
    const s = e.secure(cipher);
    for (const n of acked) expect((await s.get(`k/${n}`))?.toString()).toBe(String(n));
    expect(e.lastGuard().index).toBeGreaterThanOrEqual(BigInt(acked.length));
    const first = e.firstRetainedIndex();
    verifyChain({ index: first - 1n, hash: (await e.hashAt(first - 1n))! }, await e.readWal(first, 1000));
    expect(e.merkleRoot()).toEqual(await rootFromData(b));
    expect(reportIsClean(await e.check())).toBe(true);
  });
});

const CHILD = `
import { openLevelBackend } from './src/storage/leveldb.js';
import { StorageEngine } from './src/storage/engine.js';
import { testCipher } from './src/storage/engine.fixtures.js';
const backend = await openLevelBackend({ path: process.env.DB_PATH });
const engine = await StorageEngine.open(backend, { walMaxEntries: 50, walMaxBytes: 1 << 30 });
const store = engine.secure(testCipher(Buffer.alloc(32, 3)));
let next = 0;
async function writer() {
  while (next < 100000) {
    const n = next++;
    const ops = [
      { type: 'put', key: 'k/' + n, value: Buffer.from(String(n)) },
      { type: 'put', key: 'local/m/' + (n % 7), value: Buffer.alloc(200, n % 256) },
      { type: 'put', key: 'node/progress', value: Buffer.from(String(n)) },
    ];
    if (n % 5 === 4) ops.push({ type: 'del', key: 'local/m/' + ((n + 3) % 7) });
    await store.commit(ops);
    process.stdout.write('ack ' + n + '\\n');
  }
}
for (let w = 0; w < 8; w++) writer().catch((e) => { process.stderr.write(String(e && e.stack) + '\\n'); });
`;

/** Compiles src/core and src/storage with swc into `out` (imports already end in .js) for the child. */
async function transpile(out: string): Promise<void> {
  const swc = await import('@swc/core');
  for (const folder of ['src/core', 'src/storage']) {
    for (const f of await readdir(join(repoRoot, folder))) {
      if (!f.endsWith('.ts') || f.endsWith('.test.ts')) continue;
      const { code } = await swc.transformFile(join(repoRoot, folder, f), {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'es6' },
        swcrc: false,
      });
      const target = join(out, folder, f.replace(/\.ts$/, '.js'));
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, code);
    }
  }
  await writeFile(join(out, 'package.json'), '{"type":"module"}');
  await symlink(join(repoRoot, 'node_modules'), join(out, 'node_modules'));
  await writeFile(join(out, 'child.mjs'), CHILD);
}

async function until(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
