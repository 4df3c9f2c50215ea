/**
 * The LevelDB Backend (classic-level): utf8 keys, Buffer values, fsynced batches on request,
 * explicit snapshots. One process per directory: a held LOCK rejects with `StorageLocked`.
 *
 *   const b = await openLevelBackend({ path: '/var/lib/tessera/data' });
 *   await b.batch([{ type: 'put', key: 'k', value: Buffer.from('v') }], { sync: true });
 *   const snap = await b.snapshot();
 *   try { await snap.get('k'); } finally { await snap.close(); }
 *   await b.close();
 */
import { chmod, mkdir, open, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { ErrorCode, Internal, TesseraError } from '../core/errors.js';
import { BackendFault, type Backend, type BatchOp, type RangeOptions, type Snapshot } from './backend.js';

/** Another process (or another open handle in this one) holds the directory's LevelDB LOCK. */
export class StorageLocked extends TesseraError {
  readonly path: string;
  constructor(path: string, options?: { cause?: unknown }) {
    super(
      ErrorCode.internal,
      `storage directory ${path} is locked: another process (or handle) has it open`,
      options,
    );
    this.path = path;
  }
}

export interface LevelBackend extends Backend {
  /** Absolute path of the LevelDB directory. */
  readonly path: string;
  /** Approximate on-disk bytes of keys in [start, end); recent writes may not be counted yet. */
  approximateSize(start: string, end: string): Promise<number>;
  /** Iterators created by `iterate` (backend or snapshot) and not yet closed: a leak detector. */
  openIterators(): number;
}

type Db = ClassicLevel<string, Buffer>;
/** classic-level's explicit snapshot token (typed via the db: abstract-level is not our direct dependency). */
type AbstractSnapshot = ReturnType<Db['snapshot']>;

/**
 * The memtable size (LevelDB's default is 4 MiB). Under sustained durable writes a 4 MiB memtable
 * fills about twice a second: level-0 files pile up until LevelDB delays every write by 1 ms
 * (its slowdown trigger), and each flush deletes files while holding the mutex that every read
 * on the event loop takes. 32 MiB made sustained 16-writer throughput about 1.8x higher here,
 * for up to 64 MiB of memory (active plus flushing memtable) and a longer log replay on open.
 */
const WRITE_BUFFER_BYTES = 32 << 20;

/** Entries an iteration asks LevelDB for at first, and at most per batch (see LevelView.iterate). */
const FIRST_PULL = 16;
const MAX_PULL = 256;

/** The LevelDB codes for "the LOCK file is held"; open failures carry it as their cause. */
const LOCKED = 'LEVEL_LOCKED';

function levelCode(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null || !('code' in e)) return undefined;
  return typeof e.code === 'string' ? e.code : undefined;
}

function causeOf(e: unknown): unknown {
  return typeof e === 'object' && e !== null && 'cause' in e ? e.cause : undefined;
}

function isLocked(e: unknown): boolean {
  return levelCode(e) === LOCKED || levelCode(causeOf(e)) === LOCKED;
}

/** The codes classic-level gives a failed medium (LevelDB's Status IsCorruption / IsIOError). */
const MEDIUM_FAULTS: ReadonlySet<string> = new Set(['LEVEL_CORRUPTION', 'LEVEL_IO_ERROR']);

/** The innermost message of `e`'s cause chain: LevelDB's own status text. */
function innermostMessage(e: unknown): string {
  let cur = e;
  for (let depth = 0; depth < 8 && causeOf(cur) !== undefined; depth++) cur = causeOf(cur);
  return cur instanceof Error ? cur.message : String(cur);
}

/** A read error: BackendFault when LevelDB says the medium failed, Internal otherwise (a usage error). */
function readError(what: string, e: unknown): Error {
  for (let cur = e, depth = 0; cur !== undefined && depth < 8; cur = causeOf(cur), depth++) {
    const code = levelCode(cur);
    if (code !== undefined && MEDIUM_FAULTS.has(code)) return new BackendFault(what, innermostMessage(e), { cause: e });
  }
  return new Internal(what, { cause: e });
}

/** Owner-only modes: the directory holds every secret of the node (encrypted) and its keyring. */
const DIR_MODE = 0o700;
const FILE_MODE = 0o600;

/**
 * Makes `dir` 0700 and every file in it 0600, whatever the umask was when they were made (older
 * installs, files LevelDB created at open). Files LevelDB creates later get 0644 & ~umask: the node
 * sets its umask to 077 at start-up (node.ts), and the 0700 directory guards them regardless.
 */
async function restrictModes(dir: string): Promise<void> {
  await chmod(dir, DIR_MODE);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    // The open database may delete a file it listed meanwhile (the compaction that follows a
    // crash's log replay): a file that is gone needs no mode.
    if (entry.isFile()) await chmod(join(dir, entry.name), FILE_MODE).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
  }
}

/**
 * The last lines of LevelDB's own LOG in `dir` (where it says why an open failed, e.g. a full
 * disk during recovery), as text to append to an error; '' when there is none. It holds file
 * numbers and statuses, never keys or values.
 */
async function logTail(dir: string, lines = 8): Promise<string> {
  try {
    const file = await open(join(dir, 'LOG'), 'r');
    try {
      const { size } = await file.stat();
      const length = Math.min(size, 16 * 1024);
      const buf = Buffer.alloc(length);
      await file.read(buf, 0, length, size - length);
      const last = buf.toString('utf8').split('\n').map((l) => l.trimEnd()).filter((l) => l !== '').slice(-lines);
      return last.length === 0 ? '' : `\nlast lines of LevelDB's LOG (${join(dir, 'LOG')}):\n${last.map((l) => `  ${l.slice(0, 300)}`).join('\n')}`;
    } finally {
      await file.close();
    }
  } catch {
    return '';
  }
}

/** Opens (creating if missing, parents included) the LevelDB directory at `opts.path`. */
export async function openLevelBackend(opts: { path: string }): Promise<LevelBackend> {
  const path = resolve(opts.path);
  const db: Db = new ClassicLevel<string, Buffer>(path, {
    keyEncoding: 'utf8',
    valueEncoding: 'buffer',
    createIfMissing: true,
    writeBufferSize: WRITE_BUFFER_BYTES,
  });
  try {
    // LevelDB creates only the last path component; parents are ours to make (owner-only).
    await mkdir(path, { recursive: true, mode: DIR_MODE });
    await db.open();
  } catch (e) {
    if (isLocked(e)) throw new StorageLocked(path, { cause: e });
    throw new Internal(`cannot open storage directory ${path}: ${innermostMessage(e)}${await logTail(path)}`, { cause: e });
  }
  try {
    await restrictModes(path);
  } catch (e) {
    await db.close().catch(() => undefined);
    throw new Internal(`cannot restrict the modes of storage directory ${path}`, { cause: e });
  }
  return new LevelDbBackend(db, path);
}

type RawBatch = (ops: ReadonlyArray<{ type: 'put' | 'del'; key: string; value?: Buffer }>, options: { sync: boolean }) => Promise<void>;

/**
 * classic-level's own batch (`_batch`, the implementation under abstract-level's public batch),
 * when it has one. The public batch clones every op and runs key/value encoders, hooks and write
 * events, none of which we use: about a tenth of the event loop under write load. Ops passed
 * here are already in the binding's form (utf8 string keys, Buffer values).
 */
function rawBatchOf(db: Db): RawBatch | undefined {
  const impl: unknown = (db as unknown as { _batch?: unknown })._batch;
  return typeof impl === 'function' ? (impl.bind(db) as RawBatch) : undefined;
}

/** Counts live iterators; shared by a backend and the snapshots it hands out. */
interface IteratorCounter {
  n: number;
}

function utf8Compare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * Every given bound applies (as in MemoryBackend). abstract-level honours only one bound per side
 * (gte over gt, lte over lt), so when both are given the tighter one is passed.
 */
function iteratorOptions(range: RangeOptions, snapshot: AbstractSnapshot | undefined) {
  const { gte, gt, lte, lt } = range;
  const lower =
    gt !== undefined && (gte === undefined || utf8Compare(gt, gte) >= 0)
      ? { gt }
      : gte !== undefined
        ? { gte }
        : {};
  const upper =
    lt !== undefined && (lte === undefined || utf8Compare(lt, lte) <= 0)
      ? { lt }
      : lte !== undefined
        ? { lte }
        : {};
  // Only defined options are passed: abstract-level treats a present-but-undefined bound as set.
  return {
    ...lower,
    ...upper,
    ...(range.limit !== undefined && { limit: range.limit }),
    reverse: range.reverse === true,
    ...(snapshot !== undefined && { snapshot }),
  };
}

type ReadOptions = { snapshot: AbstractSnapshot; keyEncoding: 'utf8'; valueEncoding: 'buffer' };

/**
 * getSync's options for reads at `snapshot`, with the database's own encodings spelled out:
 * abstract-level clones an options object that does not name them, on every read (about 5 µs of
 * a ~1 µs LevelDB Get of an absent key, measured).
 */
function readOptions(snapshot: AbstractSnapshot): ReadOptions {
  return { snapshot, keyEncoding: 'utf8', valueEncoding: 'buffer' };
}

class LevelView {
  private readonly snapOptions: ReadOptions | undefined;

  constructor(
    protected readonly db: Db,
    readonly path: string,
    protected readonly counter: IteratorCounter,
    private readonly snap: AbstractSnapshot | undefined,
  ) {
    this.snapOptions = snap === undefined ? undefined : readOptions(snap);
  }

  /** getSync's options for the snapshot point reads use: this view's own, if it is one. */
  protected pointReadOptions(): ReadOptions | undefined {
    return this.snapOptions;
  }

  /**
   * A point read, done synchronously on the calling thread (classic-level's getSync): a LevelDB
   * Get of a key in the memtable or the block cache, or absent (the write path's common case),
   * costs a few microseconds, far less than a thread-pool round trip (a job, a wake-up of a
   * worker, a completion and a promise), which on a loaded 2-core machine also costs the event
   * loop a context switch. A read that must go to disk blocks the event loop for that read: the
   * data set of a secrets store is small enough to live in the page cache. Each read sees every
   * write that completed before it was asked for.
   */
  get(key: string): Promise<Buffer | undefined> {
    try {
      const options = this.pointReadOptions();
      return Promise.resolve(options === undefined ? this.db.getSync(key) : this.db.getSync(key, options));
    } catch (e) {
      return Promise.reject(readError(`storage read failed in ${this.path}`, e));
    }
  }

  /**
   * Entries in UTF-8 byte order of keys. The LevelDB iterator is created on the first pull and
   * closed in `finally`, so a consumer that breaks out of `for await` releases it.
   *
   * Entries are pulled in batches that grow from FIRST_PULL to MAX_PULL. classic-level's own
   * next() asks its native iterator for 1,000 entries after the first, and the native side
   * reserves room for all of them (64 KB) and keeps it until V8 collects the small JS iterator
   * object, which may be much later: an activation sync, one short iterator per Merkle subpage,
   * grew a primary's native memory by ~200 MB at 200,000 keys that way, never given back. A short
   * scan now reserves at most 1 KB, and a long one at most 16 KB (the native side also stops a
   * batch at 16 KB of data).
   */
  async *iterate(range: RangeOptions): AsyncIterable<[string, Buffer]> {
    const it = this.db.iterator(iteratorOptions(range, this.snap));
    this.counter.n++;
    try {
      for (let size = FIRST_PULL; ; size = Math.min(size * 4, MAX_PULL)) {
        let batch: Array<[string, Buffer]>;
        try {
          batch = await it.nextv(size);
        } catch (e) {
          throw readError(`storage iteration failed in ${this.path}`, e);
        }
        if (batch.length === 0) return;
        yield* batch;
      }
    } finally {
      this.counter.n--;
      await it.close();
    }
  }
}

class LevelSnapshot extends LevelView implements Snapshot {
  constructor(
    db: Db,
    path: string,
    counter: IteratorCounter,
    private readonly handle: AbstractSnapshot,
  ) {
    super(db, path, counter, handle);
  }

  /** Idempotent (classic-level's close is). */
  close(): Promise<void> {
    return this.handle.close();
  }
}

class LevelDbBackend extends LevelView implements LevelBackend {
  /**
   * The snapshot live reads share until the next batch completes. Taking a snapshot locks
   * LevelDB's mutex on the calling (event loop) thread, and compaction can hold that mutex for
   * milliseconds while it deletes files: one snapshot per write instead of one per read keeps
   * the event loop off it. Reads still see every batch completed before they were asked for.
   */
  private live: ReadOptions | undefined;
  private readonly rawBatch: RawBatch | undefined;

  constructor(db: Db, path: string) {
    super(db, path, { n: 0 }, undefined);
    this.rawBatch = rawBatchOf(db);
  }

  protected override pointReadOptions(): ReadOptions {
    this.live ??= readOptions(this.db.snapshot());
    return this.live;
  }

  /** The next read takes a new snapshot; the old one closes once its reads are done. */
  private retireLive(): void {
    const old = this.live;
    this.live = undefined;
    old?.snapshot.close().catch(() => undefined);
  }

  async batch(ops: readonly BatchOp[], options: { sync: boolean }): Promise<void> {
    if (ops.length === 0) return;
    const list = ops.map((op) =>
      op.type === 'put'
        ? { type: 'put' as const, key: op.key, value: op.value }
        : { type: 'del' as const, key: op.key },
    );
    try {
      if (this.rawBatch === undefined) await this.db.batch(list, { sync: options.sync });
      else if (this.db.status !== 'open') throw new Error(`database is ${this.db.status}`);
      else await this.rawBatch(list, { sync: options.sync });
    } catch (e) {
      // Whatever the cause, the batch may be partly on disk (a torn log record): always a fault.
      throw new BackendFault(`storage write failed in ${this.path}`, innermostMessage(e), { cause: e });
    } finally {
      this.retireLive();
    }
  }

  async snapshot(): Promise<Snapshot> {
    let handle: AbstractSnapshot;
    try {
      handle = this.db.snapshot();
    } catch (e) {
      throw new Internal(`cannot take a storage snapshot in ${this.path}`, { cause: e });
    }
    return new LevelSnapshot(this.db, this.path, this.counter, handle);
  }

  approximateSize(start: string, end: string): Promise<number> {
    return this.db.approximateSize(start, end);
  }

  openIterators(): number {
    return this.counter.n;
  }

  /** Waits for pending operations; unclosed iterators and snapshots are closed by LevelDB. */
  close(): Promise<void> {
    this.retireLive();
    return this.db.close();
  }
}
