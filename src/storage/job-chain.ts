/**
 * The engine's serial chain of jobs, and its open / fail-closed admission.
 *
 *   const jobs = new JobChain(() => guard.failure);
 *   await jobs.run(async () => flushDirty());        // alone, after every job queued before it
 *   await jobs.runWrite(async () => write(plan));    // refuses if closed or failed, now or at its turn
 *
 * Exactly one job runs at a time, in the order they were queued; a job's failure rejects only its
 * own caller and never stops the chain. `runWrite` checks admission twice: when called, and again
 * when its turn comes, because the store may have failed (or closed) while it waited.
 */
import { Unavailable } from '../core/errors.js';

const noop = (): void => {};

export class JobChain {
  private chain: Promise<void> = Promise.resolve();
  private isClosed = false;

  /** `refusal`: why writes are refused now (a storage fault, or this node is an HA standby); undefined when they are not. */
  constructor(private readonly refusal: () => Error | undefined) {}

  get closed(): boolean {
    return this.isClosed;
  }

  /** From now on every admission check refuses with Unavailable; queued jobs still run. */
  markClosed(): void {
    this.isClosed = true;
  }

  /** Runs `fn` alone on the serial chain, after every job queued before it. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn);
    this.chain = run.then(noop, noop);
    return run;
  }

  /** Runs a writing job on the chain; it refuses if the store failed before its turn came. */
  runWrite<T>(fn: () => Promise<T>): Promise<T> {
    this.assertWritable();
    return this.run(async () => {
      this.assertWritable();
      return fn();
    });
  }

  assertOpen(): void {
    if (this.isClosed) throw new Unavailable('storage engine is closed');
  }

  /** Open and not refused (failed, or a standby): what every write, check and reindex requires. */
  assertWritable(): void {
    this.assertOpen();
    const refused = this.refusal();
    if (refused !== undefined) throw refused;
  }
}
