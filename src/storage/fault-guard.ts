/**
 * Fail-closed storage: the Backend the engine writes through. It records the first storage fault
 * and turns it (and, from then on, every error) into `StorageFailed` (503).
 *
 *   const guarded = new FaultGuard(backend);
 *   await guarded.batch(ops, { sync: true });   // rejects StorageFailed if the write failed
 *   guarded.failure                              // the sticky StorageFailed, or undefined
 *
 * A fault is any rejected `batch` (its outcome on disk is unknown: LevelDB may have left a torn
 * record in its log, and later records appended after it are dropped by log recovery on the next
 * open, so nothing may be acknowledged after it) but one the store refused with nothing written
 * (BatchRefused: the HA guard; WriteRefused: the batch's own data), or a read rejected with
 * `BackendFault` (I/O error, corruption). Other read errors are usage errors and pass through unchanged while healthy.
 *
 * There is no in-process recovery: restarting the node reopens LevelDB, whose log recovery drops
 * the torn tail, and nothing acknowledged lies after it.
 */
import { StorageFailed } from '../core/errors.js';
import { BackendFault, BatchRefused, WriteRefused, type Backend, type BatchOp, type RangeOptions, type ReadView, type Snapshot } from './backend.js';

const ADVICE =
  'writes are refused until the node is restarted; restart it (after freeing disk space if the disk is full). ' +
  'If the error persists after a restart, the data directory is damaged: restore it from a backup or promote a DR secondary';

function detailOf(e: unknown): string {
  if (e instanceof BackendFault) return e.detail;
  return e instanceof Error ? e.message : String(e);
}

/** What a failed store's error tells the operator to do, when the store recovers by itself (PostgreSQL). */
const RECOVERS =
  'writes are refused until the database answers again and this node reloads its state from it, which it does by itself; ' +
  'nothing acknowledged is lost (a write in flight when it failed may or may not have been applied: read it back)';

export interface FaultGuardOptions {
  /** The store settles an unknown outcome by being read again (PostgreSQL): no restart needed. */
  readonly recovers?: boolean;
  /** Told once, when the first fault is recorded (and again after each clear()). */
  readonly onFault?: (failure: StorageFailed) => void;
}

export class FaultGuard implements Backend {
  private first: StorageFailed | undefined;

  constructor(
    private readonly inner: Backend,
    private readonly o: FaultGuardOptions = {},
  ) {}

  /** The first fault, sticky for the life of this guard (the process). */
  get failure(): StorageFailed | undefined {
    return this.first;
  }

  /** Records `e` as the fault (if it is the first) and returns what callers see. */
  private fault(e: unknown): StorageFailed {
    if (this.first === undefined) {
      this.first = new StorageFailed(`storage failed: ${detailOf(e)}; ${this.o.recovers === true ? RECOVERS : ADVICE}`, { cause: e });
      this.o.onFault?.(this.first);
    }
    return this.first;
  }

  /** A read error: a medium fault fails the store; anything else passes through unless already failed. */
  private readError(e: unknown): unknown {
    if (e instanceof BackendFault) return this.fault(e);
    return this.first ?? e;
  }

  /**
   * A stored value failed its integrity check (decryption): corruption LevelDB's checksums did
   * not catch. A fault like a medium's. The message names no key (it is shown by sys/health).
   */
  corrupted(cause: unknown): StorageFailed {
    return this.fault(new BackendFault('stored value rejected', `a stored value failed decryption (${detailOf(cause)})`, { cause }));
  }

  async batch(ops: readonly BatchOp[], options: { sync: boolean }): Promise<void> {
    if (this.first !== undefined) throw this.first;
    try {
      await this.inner.batch(ops, options);
    } catch (e) {
      // The guard refused inside the transaction, or the store refused the batch's data: rolled
      // back, nothing written, not a fault.
      if (e instanceof BatchRefused || e instanceof WriteRefused) throw e;
      throw this.fault(e);
    }
  }

  /**
   * Forgets the fault after the caller re-read all of its state from the medium (the engine's
   * reload, PostgreSQL only: its transactions leave no torn tail, so an unknown outcome is
   * settled by reading what the database holds).
   */
  clear(): void {
    this.first = undefined;
  }

  get(key: string): Promise<Buffer | undefined> {
    return guardedGet(this.inner, key, (e) => this.readError(e));
  }

  /** The inner backend's `getMany`, guarded; undefined when it has none. */
  get getMany(): ReadView['getMany'] {
    return guardedMany(this.inner, (e) => this.readError(e));
  }

  /** The inner backend's `iterateTails`, guarded; undefined when it has none. */
  get iterateTails(): ReadView['iterateTails'] {
    return guardedTails(this.inner, (e) => this.readError(e));
  }

  iterate(range: RangeOptions): AsyncIterable<[string, Buffer]> {
    return guardedIterate(this.inner.iterate(range), (e) => this.readError(e));
  }

  async snapshot(): Promise<Snapshot> {
    let snap: Snapshot;
    try {
      snap = await this.inner.snapshot();
    } catch (e) {
      throw this.readError(e);
    }
    const onError = (e: unknown): unknown => this.readError(e);
    const getMany = guardedMany(snap, onError);
    const iterateTails = guardedTails(snap, onError);
    return {
      get: (key) => guardedGet(snap, key, onError),
      ...(getMany !== undefined && { getMany }),
      iterate: (range) => guardedIterate(snap.iterate(range), onError),
      ...(iterateTails !== undefined && { iterateTails }),
      close: () => snap.close(),
    };
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** `view.getMany`, its errors through `onError`; undefined when the view has none. */
function guardedMany(view: ReadView, onError: (e: unknown) => unknown): ReadView['getMany'] {
  const many = view.getMany;
  if (many === undefined) return undefined;
  return async (keys) => {
    try {
      return await many.call(view, keys);
    } catch (e) {
      throw onError(e);
    }
  };
}

/** `view.iterateTails`, its errors through `onError`; undefined when the view has none. */
function guardedTails(view: ReadView, onError: (e: unknown) => unknown): ReadView['iterateTails'] {
  const tails = view.iterateTails;
  if (tails === undefined) return undefined;
  return (range, tailBytes) => guardedIterate(tails.call(view, range, tailBytes), onError);
}

async function guardedGet(view: ReadView, key: string, onError: (e: unknown) => unknown): Promise<Buffer | undefined> {
  try {
    return await view.get(key);
  } catch (e) {
    throw onError(e);
  }
}

async function* guardedIterate<T>(source: AsyncIterable<T>, onError: (e: unknown) => unknown): AsyncIterable<T> {
  const it = source[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<T>;
      try {
        next = await it.next();
      } catch (e) {
        throw onError(e);
      }
      if (next.done === true) return;
      yield next.value;
    }
  } finally {
    // A consumer that stops early releases the inner iterator (LevelDB's is closed in its finally).
    await it.return?.();
  }
}
