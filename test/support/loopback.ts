/**
 * An in-process replication channel: a PrimaryClient that calls a PrimaryService directly, with
 * the same contract as the gRPC transport (test/support/channel-contract.ts runs one suite over
 * both): the same stream semantics (start message, batches, end), deadlines, and errors, every
 * one a ChannelError with the reason the gRPC client would read (channelErrorOfService maps what
 * the service threw, as the gRPC server's status and the client's table do). Tests of the
 * replication logic use it to run without sockets; process-level tests use the real thing.
 *
 *   const link = loopback(service, 's1');
 *   const client = link.client();
 *   link.partition(true);      // open calls end 'unavailable'; forward is 'not_sent' until restored
 */
import { X509Certificate } from 'node:crypto';
import { Unavailable } from '../../src/core/errors.js';
import type { ReplicationTransport } from '../../src/replication/driver.js';
import { fingerprintOf, nameOf } from '../../src/replication/pki.js';
import {
  ChannelError, ChannelReason, channelErrorOfService, type ClusterCall, type ConnectionState, type Peer, type PrimaryClient, type PrimaryService,
  type StreamHandle, type StreamMessage, type StreamSink, type TlsMaterial,
} from '../../src/replication/transport.js';

export interface Loopback {
  client(): PrimaryClient;
  /** Makes every call fail as if the network dropped (a partition); open calls end 'unavailable'. */
  partition(down: boolean): void;
  /** Streams currently open. */
  openStreams(): number;
  /**
   * Ends the open calls (streams and unary calls in flight) with `error`, as a server that drops a
   * peer's calls does (default: the connection was lost, 'unavailable'); later calls go through.
   */
  disconnect(error?: ChannelError): void;
}

export interface LoopbackOptions {
  /** The certificate fingerprint the peer presents (default 'loopback'). */
  readonly fingerprint?: string;
  /** Whether the serving end is still there; every call fails as unavailable once it is not. */
  readonly alive?: () => boolean;
  /** Deadline of calls that name none, as the gRPC client's. Default 10 s. */
  readonly defaultDeadlineMs?: number;
}

/** One open call as the serving end can cut it. */
interface OpenCall {
  cut(error: ChannelError): void;
}

const lost = (): ChannelError => new ChannelError(ChannelReason.unavailable, 'the connection to the primary was lost');
const closedError = (): ChannelError => new ChannelError(ChannelReason.unavailable, 'replication client is closed');

export function loopback(service: PrimaryService, secondaryId: string, opts: LoopbackOptions = {}): Loopback {
  let down = false;
  const streams = new Set<OpenCall>();
  const unary = new Set<OpenCall>();
  const peer: Peer = { secondaryId, fingerprint: opts.fingerprint ?? 'loopback', address: 'loopback' };
  const isDown = (): boolean => down || (opts.alive !== undefined && !opts.alive());
  const defaultDeadlineMs = opts.defaultDeadlineMs ?? 10_000;
  const cutAll = (error: ChannelError): void => {
    for (const c of [...streams, ...unary]) c.cut(error);
  };

  const make = (): PrimaryClient => {
    let closed = false;
    const mine = new Set<StreamHandle>();
    /** One unary call: authorized like every call, with a deadline; every failure a ChannelError. */
    const call = <T>(what: ClusterCall, run: () => Promise<T>, deadlineMs = defaultDeadlineMs): Promise<T> => {
      if (closed) return Promise.reject(closedError());
      if (isDown()) return Promise.reject(new ChannelError(ChannelReason.unavailable, 'no connection to the primary'));
      return new Promise<T>((resolve, reject) => {
        let done = false;
        const settle = (fn: () => void): void => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          unary.delete(open);
          fn();
        };
        const open: OpenCall = { cut: (e) => settle(() => reject(e)) };
        const timer = setTimeout(() => settle(() => reject(new ChannelError(ChannelReason.deadline, 'Deadline exceeded'))), deadlineMs);
        unary.add(open);
        (async () => {
          service.authorize(peer, what);
          return run();
        })().then(
          (v) => settle(() => resolve(v)),
          (e: unknown) => settle(() => reject(channelErrorOfService(e))),
        );
      });
    };
    const client: PrimaryClient = {
      ping: (_id, deadlineMs) => call('ping', () => service.ping(peer), deadlineMs),
      bootstrap: (req) => call('bootstrap', () => service.bootstrap(peer, req)),
      heartbeat: (req) => call('heartbeat', () => service.heartbeat(peer, req)),
      openSnapshot: () => call('reconcile', () => service.openSnapshot(peer)),
      closeSnapshot: (id) => call('reconcile', () => service.closeSnapshot(peer, id)),
      pageHashes: (id, tree) => call('reconcile', () => service.pageHashes(peer, id, tree)),
      subpageHashes: (id, tree, page) => call('reconcile', () => service.subpageHashes(peer, id, tree, page)),
      leaves: (id, tree, page, subs) => call('reconcile', () => service.leaves(peer, id, tree, page, subs)),
      fetchValues: (id, keys) => call('reconcile', () => service.fetchValues(peer, id, keys)),
      // As over gRPC, a forward is sent only on a ready connection: else it certainly never left.
      forward: (_id, req, deadlineMs) => {
        if (!closed && isDown()) return Promise.reject(new ChannelError(ChannelReason.notSent, 'no ready connection to the primary (transient_failure)'));
        return call('forward', () => service.forward(peer, req), deadlineMs);
      },
      connectionState: (): ConnectionState => (closed ? 'shutdown' : isDown() ? 'transient_failure' : 'ready'),
      close: () => {
        closed = true;
        for (const s of [...mine]) s.cancel();
      },
      streamWal(req, handlers): StreamHandle {
        const handle = openStream(req, handlers, closed);
        mine.add(handle);
        return handle;
      },
    };
    const openStream = (
      req: Parameters<PrimaryClient['streamWal']>[0],
      handlers: Parameters<PrimaryClient['streamWal']>[1],
      clientClosed: boolean,
    ): StreamHandle => {
      let ended = false;
      const listeners: (() => void)[] = [];
      let chain: Promise<void> = Promise.resolve();
      const finish = (error?: Error): void => {
        if (ended) return;
        ended = true;
        streams.delete(open);
        mine.delete(handle);
        for (const l of listeners.splice(0)) l();
        void chain.then(() => handlers.onEnd(error));
      };
      const open: OpenCall = { cut: (e) => finish(e) };
      const handle: StreamHandle = { cancel: () => finish() };
      const sink: StreamSink = {
        send: (msg: StreamMessage) => {
          if (ended) return Promise.reject(new Unavailable('replication stream closed'));
          const delivered = chain.then(async () => {
            if (!ended) await handlers.onMessage(msg);
          });
          // A handler that throws ends the stream with its own error, as over gRPC.
          chain = delivered.catch((e: unknown) => finish(e instanceof Error ? e : new Error(String(e))));
          return delivered.catch((e: unknown) => {
            throw new Unavailable('replication stream closed', { cause: e });
          });
        },
        end: () => finish(),
        fail: (e) => finish(channelErrorOfService(e)),
        get closed() {
          return ended;
        },
        onClose: (l) => (ended ? queueMicrotask(l) : listeners.push(l)),
      };
      streams.add(open);
      if (clientClosed) {
        finish(closedError());
      } else if (isDown()) {
        finish(new ChannelError(ChannelReason.unavailable, 'no connection to the primary'));
      } else {
        try {
          service.authorize(peer, 'stream');
          service.streamWal(peer, { guard: req.guard, maxBatchEntries: req.maxBatchEntries }, sink);
        } catch (e) {
          finish(channelErrorOfService(e));
        }
      }
      return handle;
    };
    return client;
  };
  return {
    client: make,
    partition(d) {
      down = d;
      if (d) cutAll(lost());
    },
    openStreams: () => streams.size,
    disconnect(error = lost()) {
      cutAll(error);
    },
  };
}

/**
 * A ReplicationTransport without sockets, for tests of the replication driver: `serve` registers
 * the service under its address (one listener per address, kinds told apart by server name, as
 * SNI does); `connect` reaches it while it is served. What mTLS checks on the real port is checked
 * here too: the client trusts the server's CA and its certificate was issued by that CA; the peer
 * is the identity and fingerprint the certificate proves. Otherwise every call is unavailable (a
 * failed TLS handshake) and a forward is not_sent.
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
          // revoke-secondary: its open calls end refused, as the gRPC server cuts them.
          for (const l of served.links) if (l.id === id) l.lb.disconnect(new ChannelError(ChannelReason.permissionDenied, 'secondary revoked'));
        },
        close: async () => {
          if (!alive()) return;
          kinds.delete(tls.serverName);
          if (kinds.size === 0) listeners.delete(address);
          for (const l of served.links) l.lb.disconnect(new ChannelError(ChannelReason.unavailable, 'replication server is shutting down'));
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
    throw new ChannelError(ChannelReason.unavailable, 'no server');
  },
});
