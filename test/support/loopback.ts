/**
 * An in-process replication channel: a PrimaryClient that calls a PrimaryService directly, with
 * the same stream semantics as the gRPC transport (start message, batches, end). Tests of the
 * replication logic use it to run without sockets; the gRPC transport has its own tests, and the
 * process-level tests use the real thing.
 *
 *   const client = loopbackClient(service, { secondaryId: 's1' });
 */
import { X509Certificate } from 'node:crypto';
import type { ReplicationTransport } from '../../src/replication/driver.js';
import { fingerprintOf, nameOf } from '../../src/replication/pki.js';
import type {
  ClusterCall, ConnectionState, Peer, PrimaryClient, PrimaryService, StreamHandle, StreamMessage, StreamSink, TlsMaterial,
} from '../../src/replication/transport.js';

export interface Loopback {
  client(): PrimaryClient;
  /** Makes every call fail as if the network dropped (a partition). */
  partition(down: boolean): void;
  /** Streams currently open. */
  openStreams(): number;
  /** Ends the open streams, as a server that drops a peer's calls does; later calls go through. */
  disconnect(): void;
}

export interface LoopbackOptions {
  /** The certificate fingerprint the peer presents (default 'loopback'). */
  readonly fingerprint?: string;
  /** Whether the serving end is still there; every call fails as unavailable once it is not. */
  readonly alive?: () => boolean;
}

export function loopback(service: PrimaryService, secondaryId: string, opts: LoopbackOptions = {}): Loopback {
  let down = false;
  const sinks = new Set<{ close: () => void }>();
  const peer: Peer = { secondaryId, fingerprint: opts.fingerprint ?? 'loopback', address: 'loopback' };
  const isDown = (): boolean => down || (opts.alive !== undefined && !opts.alive());
  const guard = async <T>(fn: () => Promise<T>, call: ClusterCall = 'reconcile'): Promise<T> => {
    if (isDown()) throw Object.assign(new Error('unavailable: partitioned'), { code: 'unavailable' });
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
      connectionState: (): ConnectionState => (closed ? 'shutdown' : isDown() ? 'transient_failure' : 'ready'),
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
        if (isDown()) {
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
    disconnect() {
      for (const s of [...sinks]) s.close();
    },
  };
}

/**
 * A ReplicationTransport without sockets, for tests of the replication driver: `serve` registers
 * the service under its address (one listener per address, kinds told apart by server name, as
 * SNI does); `connect` reaches it while it is served. What mTLS checks on the real port is checked
 * here too: the client trusts the server's CA and its certificate was issued by that CA; the peer
 * is the identity and fingerprint the certificate proves. Otherwise every call is unavailable.
 *
 *   const net = loopbackNetwork();
 *   new ReplicationDriver({ ..., transport: net, clusterListen: 'loop:a' });
 */
export interface LoopbackNetwork extends ReplicationTransport {
  /** Cuts (true) or restores every connection to `address`. */
  partition(address: string, down: boolean): void;
  /** Streams open to `address` from `secondaryId` (any id when omitted). */
  openStreams(address: string, secondaryId?: string): number;
}

export function loopbackNetwork(): LoopbackNetwork {
  interface Served { readonly tls: TlsMaterial; readonly service: PrimaryService; readonly links: { id: string; lb: Loopback }[] }
  const listeners = new Map<string, Map<string, Served>>();
  const cut = new Set<string>();
  const unreachable = (): PrimaryClient => loopback(unavailableService, '', { alive: () => false }).client();
  return {
    async serve({ address, tls, service }) {
      const kinds = listeners.get(address) ?? new Map<string, Served>();
      listeners.set(address, kinds);
      const served: Served = { tls, service, links: [] };
      kinds.set(tls.serverName, served);
      const alive = (): boolean => listeners.get(address)?.get(tls.serverName) === served;
      return {
        address,
        disconnect: (id) => {
          for (const l of served.links) if (l.id === id) l.lb.disconnect();
        },
        close: async () => {
          if (!alive()) return;
          kinds.delete(tls.serverName);
          if (kinds.size === 0) listeners.delete(address);
          for (const l of served.links) l.lb.disconnect();
        },
      };
    },
    connect({ address, tls }) {
      const served = listeners.get(address)?.get(tls.serverName);
      if (!served || served.tls.caPem !== tls.caPem) return unreachable();
      const cert = new X509Certificate(tls.certPem);
      if (!cert.checkIssued(new X509Certificate(served.tls.caPem))) return unreachable();
      const id = nameOf(tls.certPem);
      const alive = (): boolean => listeners.get(address)?.get(tls.serverName) === served && !cut.has(address);
      const lb = loopback(served.service, id, { fingerprint: fingerprintOf(tls.certPem), alive });
      served.links.push({ id, lb });
      return lb.client();
    },
    partition(address, down) {
      if (down) cut.add(address);
      else cut.delete(address);
      for (const served of listeners.get(address)?.values() ?? []) if (down) for (const l of served.links) l.lb.disconnect();
    },
    openStreams(address, secondaryId) {
      let n = 0;
      for (const served of listeners.get(address)?.values() ?? []) {
        for (const l of served.links) if (secondaryId === undefined || l.id === secondaryId) n += l.lb.openStreams();
      }
      return n;
    },
  };
}

/** Never called: the client of an unreachable address fails every call before reaching it. */
const unavailableService = new Proxy({} as PrimaryService, {
  get: () => () => {
    throw Object.assign(new Error('unavailable: no server'), { code: 'unavailable' });
  },
});
