/**
 * Keeps the active node's lease from a worker thread (issue 26 item 5). The lease is renewed from
 * the main thread too, but an event-loop stall (a long GC, a big request, a machine whose cores
 * are all busy) of ~1.5 s would otherwise miss the deadline and cost a step-down and a takeover
 * although nothing is wrong. The keeper's thread renews with its own connection while the main
 * thread's heartbeat is younger than `stallLimitMs`, and the controller takes the send time of
 * each renewal it made (the lease machine's `leaseExtended`), so a stall shorter than the lease
 * costs nothing. A main thread stalled past the limit is not kept: its lease expires at the
 * database, another node takes over, and the fence refuses every commit of the old one.
 *
 *   const keeper = await LeaseKeeper.start({ connectionUrl, table, ttlMs: 2000, renewMs: 500, stallLimitMs: 1000, log });
 *   keeper.keep(holder, epoch);            // became active
 *   keeper.renewedFrom(epoch);             // the last accepted renewal's send time, if any
 *   keeper.drop();                         // stopped being active
 *   await keeper.close();
 *
 * Under a test runner that loads TypeScript sources (no compiled worker file), `start` answers
 * undefined and the node renews from its main thread alone.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { Slot, SLOT_COUNT, type KeeperData, type KeepMessage } from './lease-keeper-slots.js';

/** How often the main thread writes its heartbeat (ms). */
const HEARTBEAT_MS = 100;
/** How long the node's start waits for the keeper's connection (ms). */
const READY_MS = 10_000;

export interface LeaseKeeperOptions extends Omit<KeeperData, 'shared'> {
  readonly log: Logger;
}

export class LeaseKeeper {
  private readonly slots: Float64Array;
  private readonly beat: NodeJS.Timeout;
  private kept = 0;

  private constructor(
    private readonly worker: Worker,
    shared: SharedArrayBuffer,
  ) {
    this.slots = new Float64Array(shared);
    this.slots[Slot.heartbeat] = Date.now();
    this.beat = setInterval(() => (this.slots[Slot.heartbeat] = Date.now()), HEARTBEAT_MS);
    this.beat.unref();
  }

  static async start(o: LeaseKeeperOptions): Promise<LeaseKeeper | undefined> {
    const file = fileURLToPath(new URL('./lease-keeper-worker.js', import.meta.url));
    if (!existsSync(file)) {
      o.log.debug('HA: no compiled lease keeper worker (sources run directly); the lease is renewed from the main thread only');
      return undefined;
    }
    const { log, ...rest } = o;
    const shared = new SharedArrayBuffer(SLOT_COUNT * Float64Array.BYTES_PER_ELEMENT);
    const data: KeeperData = { ...rest, shared };
    const worker = new Worker(file, { workerData: data });
    worker.unref();
    worker.on('error', (e) => log.warn({ err: e.message }, 'HA: the lease keeper thread failed; the lease is renewed from the main thread only'));
    // Its connection is its own: a database slow to answer it must not hold the node's start.
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), READY_MS);
      const onMessage = (m: { type?: string }): void => {
        if (m.type !== 'ready') return;
        worker.off('message', onMessage);
        clearTimeout(timer);
        resolve(true);
      };
      worker.on('message', onMessage);
      worker.once('error', () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (!ready) {
      await worker.terminate();
      log.warn('HA: the lease keeper thread did not connect in time; the lease is renewed from the main thread only');
      return undefined;
    }
    return new LeaseKeeper(worker, shared);
  }

  /** This node holds the lease under `epoch`: renew it from the keeper's thread. */
  keep(holder: string, epoch: number): void {
    if (this.kept === epoch) return;
    this.kept = epoch;
    this.post({ type: 'keep', holder, epoch });
  }

  /** This node no longer holds the lease: stop renewing at once. */
  drop(): void {
    if (this.kept === 0) return;
    this.kept = 0;
    this.post({ type: 'keep', epoch: 0 });
  }

  /** The send time of the last renewal the database accepted under `epoch`, if the keeper made one. */
  renewedFrom(epoch: number): number | undefined {
    if (this.kept !== epoch || this.slots[Slot.renewedEpoch] !== epoch) return undefined;
    return this.slots[Slot.renewedAt];
  }

  async close(): Promise<void> {
    clearInterval(this.beat);
    this.drop();
    const closed = new Promise<void>((resolve) => {
      const done = (): void => resolve();
      this.worker.once('exit', done);
      this.worker.on('message', (m: { type?: string }) => m.type === 'closed' && done());
      setTimeout(done, 2_000).unref();
    });
    this.post({ type: 'close' });
    await closed;
    await this.worker.terminate();
  }

  private post(m: KeepMessage): void {
    this.worker.postMessage(m);
  }
}
