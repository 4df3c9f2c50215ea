/**
 * The StreamSink a PrimaryService writes a WAL stream into: one server-streaming call. `send`
 * waits while the call's buffer is full (HTTP/2 flow control reaching back from a slow
 * secondary), so a streamer that awaits each send holds at most a buffer's worth per secondary.
 *
 *   const sink = new CallSink(call, (e) => statusOf(e, log));
 *   sink.onClose(() => streamer.stop());
 *   await sink.send({ type: 'heartbeat', lastWal, lastCommitTimeMs, sentAtMs });
 */
import { once } from 'node:events';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { Unavailable } from '../../core/errors.js';
import type { StreamMessage, StreamSink } from '../../replication/index.js';
import { encode } from './codec.js';
import type { CallStatus } from './status.js';
import type * as wire from './wire.js';

export class CallSink implements StreamSink {
  private readonly closing = new AbortController();
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly call: ServerWritableStream<unknown, wire.StreamMessage>,
    private readonly statusOf: (error: unknown) => CallStatus,
  ) {
    // 'cancelled': the peer went away or the deadline passed; 'close': the call is over for any reason.
    call.once('cancelled', () => this.markClosed());
    call.once('close', () => this.markClosed());
  }

  get closed(): boolean {
    return this.closing.signal.aborted;
  }

  /** Rejects with Unavailable once the stream is closed, including while waiting for the peer. */
  async send(msg: StreamMessage): Promise<void> {
    if (this.closed) throw new Unavailable('replication stream closed');
    if (this.call.write(encode.streamMessage(msg))) return;
    try {
      await once(this.call, 'drain', { signal: this.closing.signal });
    } catch (e) {
      if (this.closed) throw new Unavailable('replication stream closed', { cause: e });
      throw e;
    }
  }

  end(): void {
    if (this.closed) return;
    this.markClosed();
    this.call.end();
  }

  fail(error: Error): void {
    this.cut(this.statusOf(error));
  }

  /** Ends the call with `status`. Messages the transport already accepted still go first. */
  cut(status: CallStatus): void {
    if (this.closed) return;
    this.markClosed();
    this.call.emit('error', status);
  }

  onClose(listener: () => void): void {
    if (this.closed) queueMicrotask(listener);
    else this.listeners.push(listener);
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closing.abort();
    for (const listener of this.listeners.splice(0)) listener();
  }
}
