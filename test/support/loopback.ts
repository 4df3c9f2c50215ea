/**
 * An in-process replication channel: a PrimaryClient that calls a PrimaryService directly, with
 * the same stream semantics as the gRPC transport (start message, batches, end). Tests of the
 * replication logic use it to run without sockets; the gRPC transport has its own tests, and the
 * process-level tests use the real thing.
 *
 *   const client = loopbackClient(service, { secondaryId: 's1' });
 */
import type {
  ClusterCall, ConnectionState, Peer, PrimaryClient, PrimaryService, StreamHandle, StreamMessage, StreamSink,
} from '../../src/replication/transport.js';

export interface Loopback {
  client(): PrimaryClient;
  /** Makes every call fail as if the network dropped (a partition). */
  partition(down: boolean): void;
  /** Streams currently open. */
  openStreams(): number;
}

export function loopback(service: PrimaryService, secondaryId: string): Loopback {
  let down = false;
  const sinks = new Set<{ close: () => void }>();
  const peer: Peer = { secondaryId, fingerprint: 'loopback', address: 'loopback' };
  const guard = async <T>(fn: () => Promise<T>, call: ClusterCall = 'reconcile'): Promise<T> => {
    if (down) throw Object.assign(new Error('unavailable: partitioned'), { code: 'unavailable' });
    service.authorize(peer, call);
    return fn();
  };
  const make = (): PrimaryClient => {
    let closed = false;
    return {
      ping: async () => guard(() => service.ping(peer), 'ping'),
      bootstrap: (req) => guard(() => service.bootstrap(peer, req), 'bootstrap'),
      heartbeat: (req) => guard(() => service.heartbeat(peer, req), 'heartbeat'),
      openSnapshot: () => guard(() => service.openSnapshot(peer)),
      closeSnapshot: (id) => guard(() => service.closeSnapshot(peer, id)),
      pageHashes: (id, tree) => guard(() => service.pageHashes(peer, id, tree)),
      subpageHashes: (id, tree, page) => guard(() => service.subpageHashes(peer, id, tree, page)),
      leaves: (id, tree, page, subs) => guard(() => service.leaves(peer, id, tree, page, subs)),
      fetchValues: (id, keys) => guard(() => service.fetchValues(peer, id, keys)),
      forward: (_id, req) => guard(() => service.forward(peer, req), 'forward'),
      connectionState: (): ConnectionState => (closed ? 'shutdown' : down ? 'transient_failure' : 'ready'),
      close: () => {
        closed = true;
      },
      streamWal(req, handlers): StreamHandle {
        let isClosed = false;
        const listeners: (() => void)[] = [];
        let chain: Promise<void> = Promise.resolve();
        const close = (error?: Error) => {
          if (isClosed) return;
          isClosed = true;
          sinks.delete(entry);
          for (const l of listeners) l();
          void chain.then(() => handlers.onEnd(error));
        };
        const entry = { close: () => close(Object.assign(new Error('unavailable: partitioned'), { code: 'unavailable' })) };
        sinks.add(entry);
        const sink: StreamSink = {
          send: (msg: StreamMessage) => {
            if (isClosed) return Promise.resolve();
            chain = chain.then(async () => {
              if (!isClosed) await handlers.onMessage(msg);
            });
            return chain;
          },
          end: () => close(),
          fail: (e) => close(e),
          get closed() {
            return isClosed;
          },
          onClose: (l) => listeners.push(l),
        };
        if (down) {
          entry.close();
        } else {
          try {
            service.authorize(peer, 'stream');
            service.streamWal(peer, { guard: req.guard, maxBatchEntries: req.maxBatchEntries }, sink);
          } catch (e) {
            close(e as Error);
          }
        }
        return { cancel: () => close() };
      },
    };
  };
  return {
    client: make,
    partition(d) {
      down = d;
      if (d) for (const s of [...sinks]) s.close();
    },
    openStreams: () => sinks.size,
  };
}
