/**
 * A performance secondary's write forwarding (REPLICATION.md 8): sends a write it authorized to
 * its primary over the mTLS cluster channel (its own client certificate, never a client token),
 * then holds the answer until its own applied upstream index has reached the index the primary
 * committed the write at, so the client reads its own write here. The wait is bounded (2 s by
 * default); past it the answer goes out with a warning saying so.
 *
 *   const fwd = new WriteForwarder({ target: () => ..., connect, applied: () => applier.guard().index, settled, waitMs: 2000 });
 *   loop.onApplied = (i) => fwd.applied(i);
 *   const { reply, warnings } = await fwd.forward(request);
 */
import { ForwardFailed } from '../core/errors.js';
import { ChannelError, ChannelReason, type ForwardOutcome, type ForwardReply, type ForwardRequest, type PrimaryClient, type TlsMaterial } from './transport.js';

/** Where a connected secondary forwards to; undefined when it is not one (bootstrapping, disabled). */
export interface ForwardTarget {
  readonly secondaryId: string;
  readonly clusterAddr: string;
  readonly tls: TlsMaterial;
}

export interface ForwarderOptions {
  readonly target: () => ForwardTarget | undefined;
  readonly connect: (opts: { address: string; tls: TlsMaterial }) => PrimaryClient;
  /** The upstream index applied so far (undefined before the first). */
  readonly applied: () => bigint | undefined;
  /** Resolves once applied replicated data is visible to the core (its caches reloaded). */
  readonly settled: () => Promise<void>;
  /** Longest the answer waits for this node to apply the write. Default 2000 ms. */
  readonly waitMs?: number;
  /** Deadline of the Forward call itself. Default 10 s. */
  readonly callDeadlineMs?: number;
}

export const DEFAULT_FORWARD_WAIT_MS = 2_000;

interface Waiter {
  readonly index: bigint;
  done(applied: boolean): void;
}

export class WriteForwarder {
  private client: { key: string; client: PrimaryClient } | undefined;
  private readonly waiters = new Set<Waiter>();

  constructor(private readonly o: ForwarderOptions) {}

  async forward(req: ForwardRequest): Promise<ForwardOutcome> {
    const target = this.o.target();
    if (!target) throw new ForwardFailed('this performance secondary is not connected to a primary yet, so writes to replicated paths cannot be forwarded; nothing was written');
    const reply = await this.call(target, req);
    // A refused write changed nothing on the primary: there is nothing to wait for.
    if (reply.kind === 'error') return { reply, warnings: [] };
    const waitMs = this.o.waitMs ?? DEFAULT_FORWARD_WAIT_MS;
    if (!(await this.waitApplied(reply.commitIndex, waitMs))) {
      return {
        reply,
        warnings: [`the write was applied on the primary (WAL index ${reply.commitIndex}) but this performance secondary had not received it within ${waitMs} ms; a read here may not show it yet`],
      };
    }
    await this.o.settled();
    return { reply, warnings: [] };
  }

  /** The replication loop applied upstream entries up to `index`. */
  applied(index: bigint): void {
    for (const w of [...this.waiters]) if (w.index <= index) w.done(true);
  }

  /** Drops the channel (the primary changed, or the role stopped); waiting answers go out now. */
  close(): void {
    this.client?.client.close();
    this.client = undefined;
    for (const w of [...this.waiters]) w.done(false);
  }

  private clientFor(t: ForwardTarget): PrimaryClient {
    const key = `${t.clusterAddr}\n${t.tls.certPem}`;
    if (this.client?.key !== key) {
      this.client?.client.close();
      this.client = { key, client: this.o.connect({ address: t.clusterAddr, tls: t.tls }) };
    }
    return this.client.client;
  }

  /**
   * Once the request may have left, a failure says the outcome is unknown: only a call that was
   * never sent (no ready connection) or that the primary refused at admission wrote nothing.
   */
  private async call(t: ForwardTarget, req: ForwardRequest): Promise<ForwardReply> {
    try {
      return await this.clientFor(t).forward(t.secondaryId, req, this.o.callDeadlineMs ?? 10_000);
    } catch (e) {
      const detail = e instanceof Error ? e.message : String(e);
      const reason = e instanceof ChannelError ? e.reason : undefined;
      if (reason === ChannelReason.notSent) {
        throw new ForwardFailed(`the primary (${t.clusterAddr}) is unreachable, so the write to a replicated path could not be forwarded (${detail}); nothing was written`, { cause: e });
      }
      if (e instanceof ChannelError && e.refused) {
        throw new ForwardFailed(`the primary (${t.clusterAddr}) refused this secondary's forwarded write (${detail}); nothing was written`, { cause: e });
      }
      const what = reason === ChannelReason.deadline ? 'did not answer the forwarded write in time' : `stopped answering after the write was sent (${detail})`;
      throw new ForwardFailed(`the primary (${t.clusterAddr}) ${what}: the outcome is unknown, the write may have been applied on the primary; read it back before retrying`, { cause: e });
    }
  }

  private waitApplied(index: bigint, ms: number): Promise<boolean> {
    if ((this.o.applied() ?? -1n) >= index) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const w: Waiter = {
        index,
        done: (ok) => {
          clearTimeout(timer);
          this.waiters.delete(w);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => w.done((this.o.applied() ?? -1n) >= index), ms);
      this.waiters.add(w);
    });
  }
}
