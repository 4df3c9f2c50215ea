/**
 * A performance standby's side of read leases (src/core/ha/read-lease.ts): one stream to the
 * active node's cluster port, an ask every `everyMs`, each push acknowledged as it arrives. What it
 * learns goes into the HeldReadLease the standby's read barrier consults (standby-reads.ts).
 *
 *   const client = new ReadLeaseClient({ held, target: () => leaderClusterAddr, open, now, everyMs: 250, log });
 *   client.start();  ...  client.stop();
 */
import type { Logger } from 'pino';
import type { HeldReadLease, LeaseDown, LeaseUp, PushedWal } from '../core/ha/read-lease.js';

/** A stream to the active node as the transport opens it. */
export interface LeaseChannel {
  send(m: LeaseUp): void;
  onMessage(fn: (m: LeaseDown) => void): void;
  /** Called once when the stream ended or failed. */
  onEnd(fn: (why: string) => void): void;
  close(): void;
}

export interface ReadLeaseClientOptions {
  readonly held: HeldReadLease;
  /**
   * Takes a push's WAL entries into the standby's cache (standby-reads.ts takePushed); true when it
   * did, so the push counts as followed. Called only when every earlier push was followed.
   */
  readonly take?: (wal: PushedWal) => boolean;
  /** The active node's cluster address while this node should hold a lease (a performance standby), else undefined. */
  readonly target: () => string | undefined;
  /** Opens a stream to a cluster address; undefined when it cannot now (no HA certificates yet). */
  readonly open: (address: string) => Promise<LeaseChannel | undefined>;
  /** A monotonic clock (ms). */
  readonly now: () => number;
  readonly everyMs: number;
  readonly log: Logger;
}

export class ReadLeaseClient {
  private stream: { readonly address: string; readonly channel: LeaseChannel } | undefined;
  private opening = false;
  private nextAsk = 1;
  private readonly asked = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: ReadLeaseClientOptions) {}

  start(): void {
    this.timer ??= setInterval(() => this.tick(), this.o.everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.drop();
  }

  /** One step: the stream follows the target; an ask goes out on it. */
  tick(): void {
    const target = this.o.target();
    if (this.stream !== undefined && this.stream.address !== target) this.drop();
    if (target === undefined) return;
    if (this.stream === undefined) {
      this.connect(target);
      return;
    }
    const ask = this.nextAsk++;
    this.asked.set(ask, this.o.now());
    // Asks never answered (a grant refused: the node is stepping down) go after a while.
    for (const k of this.asked.keys()) if (k < ask - 16) this.asked.delete(k);
    this.stream.channel.send({ type: 'ask', ask });
  }

  private connect(address: string): void {
    if (this.opening) return;
    this.opening = true;
    this.o
      .open(address)
      .then((channel) => {
        if (channel === undefined) return;
        if (this.o.target() !== address || this.stream !== undefined) {
          channel.close();
          return;
        }
        const stream = { address, channel };
        this.stream = stream;
        channel.onMessage((m) => this.received(stream, m));
        channel.onEnd((why) => {
          if (this.stream !== stream) return;
          this.o.log.debug({ address, why }, 'HA: the read-lease stream to the active node ended');
          this.drop();
        });
        this.tick();
      })
      .catch((e: unknown) => this.o.log.debug({ address, err: (e as Error).message }, 'HA: could not open a read-lease stream to the active node'))
      .finally(() => (this.opening = false));
  }

  private received(stream: NonNullable<ReadLeaseClient['stream']>, m: LeaseDown): void {
    if (this.stream !== stream) return;
    if (m.type === 'push') {
      const before = this.o.held.followBegins();
      this.o.held.pushed(m.seq, stream);
      // Taken before the ack: once the active node acknowledges the write, this standby holds it.
      if (m.wal !== undefined && this.o.held.covers(before, stream) && this.o.take?.(m.wal) === true) this.o.held.followed({ stream, seq: m.seq });
      stream.channel.send({ type: 'ack', seq: m.seq });
    } else if (m.type === 'grant') {
      const askedAt = this.asked.get(m.ask);
      if (askedAt === undefined) return;
      this.asked.delete(m.ask);
      this.o.held.granted(askedAt, m, stream);
    } else {
      this.o.held.revoked();
      stream.channel.send({ type: 'revoked' });
    }
  }

  private drop(): void {
    const s = this.stream;
    this.stream = undefined;
    this.asked.clear();
    this.o.held.lost();
    s?.channel.close();
  }
}
