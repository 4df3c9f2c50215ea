/**
 * Serves the PrimaryService of every replication kind this node is primary of on ONE cluster
 * port, over mutual TLS. Each kind registers its CA, server certificate and service; the TLS
 * handshake picks the kind's server certificate by SNI and verifies the client certificate
 * against that kind's CA only (sni-credentials.ts), so a DR secondary's certificate is refused
 * under the performance server name and the reverse. Per call the peer's certificate becomes a
 * `Peer` (DNS SAN = secondary id, SHA-256 fingerprint); the kind of the call is the registered
 * kind whose CA issued that (already verified) certificate, and every method, Ping included,
 * first passes that kind's `service.authorize(peer, call)`: a revoked id cannot even probe.
 * Open calls are keyed by (kind, secondary id). The HA service (ha-service.ts) is registered
 * beside the kinds, not as one: its own server name, CA and handlers; its certificates reach
 * only its handlers, and the kinds' certificates never reach them.
 *
 *   const cluster = createClusterServer({ address: '0.0.0.0:8201', log });
 *   const dr = await cluster.serve({ kind: 'dr', tls: drTls, service: drService });     // binds
 *   const perf = await cluster.serve({ kind: 'performance', tls: perfTls, service });  // same port
 *   dr.disconnect('dr-east');   // revoke-secondary: its open DR calls end with PERMISSION_DENIED
 *   await dr.close();           // DR handshakes fail from now on; performance keeps serving
 *   const ha = await cluster.serveHa({ tls: haTls, handlers: { forward } });   // same port
 *   await perf.close();         // the last registration gone (kinds and HA): the listener closes
 *
 * `serveReplication` is the one-kind form (tests, tools): one listener for one service.
 */
import { X509Certificate } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { InvalidRequest, PermissionDenied, Unavailable } from '../../core/errors.js';
import { fingerprintOf, identityOf } from '../../replication/index.js';
import type { ClusterCall, Peer, PrimaryService, ReplicationServer, TlsMaterial } from '../../replication/index.js';
import { decode, encode } from './codec.js';
import { MAX_MESSAGE_BYTES, loadReplication } from './proto.js';
import { CallSink } from './sink.js';
import { SniServerCredentials } from './sni-credentials.js';
import { callStatus, statusOf, type CallStatus } from './status.js';
import type * as wire from './wire.js';
import { loadHa } from './ha.js';
import { haServiceHandlers, type HaHandlers, type HaRegistration, type HaServing } from './ha-service.js';

export interface ClusterServerOptions {
  /** host:port; port 0 picks a free one when the first kind starts the listener. */
  readonly address: string;
  /** Receives errors that are answered as a bare INTERNAL (pino's logger fits). */
  readonly log?: { error(obj: unknown, msg?: string): void };
  /** How long stopping the listener lets ended calls flush before cutting connections. Default 1000 ms. */
  readonly closeGraceMs?: number;
}

export interface KindRegistration {
  /** The replication kind ('dr', 'performance'): open calls are keyed by (kind, secondary id). */
  readonly kind: string;
  /** caPem verifies this kind's client certificates; certPem/keyPem are served under serverName. */
  readonly tls: TlsMaterial;
  readonly service: PrimaryService;
}

export interface ClusterServer {
  /**
   * Adds (or replaces) one kind; the first one starts the listener. The returned handle's close()
   * removes the kind without touching the others; the last one to leave stops the listener.
   */
  serve(registration: KindRegistration): Promise<ReplicationServer>;
  /**
   * Serves (or replaces) the HA service (proto/ha.proto, ha-service.ts) beside the kinds, under
   * its own server name and CA: only certificates of that CA reach its handlers, and they make no
   * replication call. It keeps the listener running as a kind does; its close() removes it alone.
   */
  serveHa(registration: HaRegistration): Promise<HaServing>;
  /** Removes every kind and stops the listener. */
  close(): Promise<void>;
}

export interface ServeOptions extends ClusterServerOptions {
  /** caPem verifies client certificates; certPem/keyPem are the server leaf (its SNI name: serverName). */
  readonly tls: TlsMaterial;
  readonly service: PrimaryService;
  /** Default 'dr'. */
  readonly kind?: string;
}

const SERVER_OPTIONS: grpc.ChannelOptions = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  // Ping idle secondaries so a dead one's stream (and its sink) closes within ~10 s.
  'grpc.keepalive_time_ms': 5_000,
  'grpc.keepalive_timeout_ms': 5_000,
  // Clients ping every 2 s even without calls (client.ts). grpc-js does not police pings, but
  // these state the contract for any other server implementation.
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.min_ping_interval_without_data_ms': 1_000,
  // Binding a host name (a compose service's cluster_addr) resolves it; no DNS TXT lookup for a
  // gRPC service config with it (client.ts says why: one DNS does not answer outlives the node).
  'grpc.service_config_disable_resolution': 1,
};

type CallContext = Pick<grpc.ServerUnaryCall<unknown, unknown>, 'getAuthContext' | 'getPeer'>;

/** One open call, as disconnect() and close() need it. */
interface OpenCall {
  cut(status: CallStatus): void;
}

/** One kind being served. */
interface Served {
  readonly kind: string;
  readonly serverName: string;
  readonly service: PrimaryService;
  readonly ca: X509Certificate;
  /** secondary id -> its open calls. */
  readonly open: Map<string, Set<OpenCall>>;
}

/** The HA service being served. */
interface HaServed {
  readonly serverName: string;
  readonly handlers: HaHandlers;
  readonly ca: X509Certificate;
}

/** Who claims a server name for the HA service (kinds claim theirs by kind name). */
const HA_OWNER = 'HA forwarding';

const shuttingDown = (): CallStatus => callStatus(grpc.status.UNAVAILABLE, 'replication server is shutting down');

/** One listener, one service: what a single-kind caller (tests, tools) needs. */
export async function serveReplication(opts: ServeOptions): Promise<ReplicationServer> {
  const cluster = createClusterServer(opts);
  const served = await cluster.serve({ kind: opts.kind ?? 'dr', tls: opts.tls, service: opts.service });
  return { address: served.address, disconnect: (id) => served.disconnect(id), close: () => cluster.close() };
}

export function createClusterServer(opts: ClusterServerOptions): ClusterServer {
  const { definition } = loadReplication();
  const { log } = opts;
  const credentials = new SniServerCredentials();
  const kinds = new Map<string, Served>();
  let ha: HaServed | undefined;
  /** The registration each admitted peer was admitted under (the service methods route by it). */
  const admitted = new WeakMap<Peer, Served>();
  /** Certificate fingerprint -> the kind (or the HA service) whose CA issued it (cleared whenever they change). */
  const issuers = new Map<string, Served | HaServed | null>();
  let running: { server: grpc.Server; address: string } | undefined;
  /** Start, stop, add and remove run one at a time, in order. */
  let lifecycle: Promise<unknown> = Promise.resolve();
  const serially = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = lifecycle.then(fn, fn);
    lifecycle = run.catch(() => undefined);
    return run;
  };

  const toStatus = (error: unknown): CallStatus =>
    statusOf(error, (e) => log?.error({ err: e }, 'replication call failed'));

  /**
   * The TLS layer verified the certificate against the CA of the kind its SNI named; that CA is
   * the one that issued it. Checked once per certificate (parse and signature), then cached.
   */
  const issuerOf = (raw: Buffer, fingerprint: string): Served | HaServed | undefined => {
    const known = issuers.get(fingerprint);
    if (known !== undefined) return known ?? undefined;
    let found: Served | HaServed | null = null;
    try {
      const cert = new X509Certificate(raw);
      for (const served of [...kinds.values(), ...(ha !== undefined ? [ha] : [])]) {
        if (cert.checkIssued(served.ca) && cert.verify(served.ca.publicKey)) found = served;
      }
    } catch {
      found = null;
    }
    if (issuers.size > 10_000) issuers.clear();
    issuers.set(fingerprint, found);
    return found ?? undefined;
  };

  const track = (peer: Peer, call: OpenCall): (() => void) => {
    const served = admitted.get(peer);
    if (!served) return () => {};
    const id = peer.secondaryId;
    let calls = served.open.get(id);
    if (!calls) served.open.set(id, (calls = new Set()));
    calls.add(call);
    return () => {
      calls.delete(call);
      if (calls.size === 0 && served.open.get(id) === calls) served.open.delete(id);
    };
  };

  /** Who is calling and for which kind; throws PermissionDenied (or Unavailable) before any work. */
  const admit = (call: CallContext, kind: ClusterCall): Peer => {
    if (kinds.size === 0 && ha === undefined) throw new Unavailable('replication server is shutting down');
    const cert = call.getAuthContext().sslPeerCertificate;
    if (!cert?.raw) throw new PermissionDenied('a client certificate is required');
    // Node has parsed the certificate already; re-parsing the DER per call would cost far more.
    let secondaryId: string;
    try {
      const cn = cert.subject?.CN;
      secondaryId = identityOf(cert.subjectaltname, Array.isArray(cn) ? cn[0] : cn);
    } catch {
      throw new PermissionDenied('the client certificate names no identity');
    }
    const fingerprint = fingerprintOf(cert.raw);
    // A connection made under a kind that has since been removed (or whose CA changed).
    const served = issuerOf(cert.raw, fingerprint);
    if (served !== undefined && served === ha) throw new PermissionDenied('an HA certificate cannot make replication calls');
    if (!served || !('kind' in served)) throw new Unavailable('this cluster no longer serves the replication set of this certificate');
    const peer: Peer = { secondaryId, fingerprint, address: call.getPeer() };
    admitted.set(peer, served);
    served.service.authorize(peer, kind);
    return peer;
  };

  /**
   * The service the handlers call: every PrimaryService method takes the admitted peer first, and
   * goes to the kind it was admitted under, while that kind is still served.
   */
  const service = new Proxy({} as PrimaryService, {
    get: (_target, method) => (peer: Peer, ...args: unknown[]) => {
      const served = admitted.get(peer);
      if (!served || kinds.get(served.kind) !== served) throw new Unavailable('replication server is shutting down');
      const fn = served.service[method as keyof PrimaryService] as (...a: unknown[]) => unknown;
      return fn.call(served.service, peer, ...args);
    },
  });

  /** A unary method: admit, decode, run, encode; disconnect() can answer it early. */
  function unary<Req, Res>(
    kind: ClusterCall,
    run: (peer: Peer, req: Req) => Promise<Res>,
  ): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      let answered = false;
      let untrack = (): void => {};
      const answer = (error: CallStatus | null, res?: Res): void => {
        if (answered) return;
        answered = true;
        untrack();
        if (error) callback(error);
        else callback(null, res);
      };
      void (async () => {
        const peer = admit(call, kind);
        untrack = track(peer, { cut: (s) => answer(s) });
        return run(peer, call.request);
      })().then(
        (res) => answer(null, res),
        (e: unknown) => answer(toStatus(e)),
      );
    };
  }

  const handlers: grpc.UntypedServiceImplementation = {
    Ping: unary<wire.PingRequest, wire.PingResponse>('ping', async (peer) =>
      encode.pingInfo(await service.ping(peer)),
    ),
    Bootstrap: unary<wire.BootstrapRequest, wire.BootstrapResponse>('bootstrap', async (peer, req) =>
      encode.bootstrapInfo(await service.bootstrap(peer, decode.bootstrapRequest(req))),
    ),
    Heartbeat: unary<wire.HeartbeatRequest, wire.HeartbeatResponse>('heartbeat', async (peer, req) =>
      encode.heartbeatReply(await service.heartbeat(peer, decode.heartbeatRequest(req))),
    ),
    OpenSnapshot: unary<wire.OpenSnapshotRequest, wire.SnapshotInfo>('reconcile', async (peer) =>
      encode.snapshotInfo(await service.openSnapshot(peer)),
    ),
    CloseSnapshot: unary<wire.SnapshotRef, wire.Empty>('reconcile', async (peer, req) => {
      await service.closeSnapshot(peer, req.snapshotId);
      return {};
    }),
    PageHashes: unary<wire.PageHashesRequest, wire.HashList>('reconcile', async (peer, req) => ({
      hashes: await service.pageHashes(peer, req.snapshotId, decode.tree(req.tree)),
    })),
    SubpageHashes: unary<wire.SubpageHashesRequest, wire.HashList>('reconcile', async (peer, req) => ({
      hashes: await service.subpageHashes(peer, req.snapshotId, decode.tree(req.tree), req.page),
    })),
    Leaves: unary<wire.LeavesRequest, wire.LeafList>('reconcile', async (peer, req) =>
      encode.leaves(await service.leaves(peer, req.snapshotId, decode.tree(req.tree), req.page, req.subpages)),
    ),
    FetchValues: unary<wire.FetchValuesRequest, wire.ValueList>('reconcile', async (peer, req) =>
      encode.values(await service.fetchValues(peer, req.snapshotId, req.keys)),
    ),
    Forward: unary<wire.ForwardRequest, wire.ForwardResponse>('forward', async (peer, req) =>
      encode.forwardReply(await service.forward(peer, decode.forwardRequest(req))),
    ),
    StreamWal: (call: grpc.ServerWritableStream<wire.StreamRequest, wire.StreamMessage>) => {
      const sink = new CallSink(call, toStatus);
      let peer: Peer;
      let req: ReturnType<typeof decode.streamRequest>;
      try {
        peer = admit(call, 'stream');
        req = decode.streamRequest(call.request);
      } catch (e) {
        sink.fail(e as Error);
        return;
      }
      sink.onClose(track(peer, sink));
      try {
        service.streamWal(peer, { guard: req.guard, maxBatchEntries: req.maxBatchEntries }, sink);
      } catch (e) {
        sink.fail(e as Error);
      }
    },
  };

  /** The HA service's handlers for a caller whose certificate the HA registration's CA issued. */
  const admitHa = (call: Pick<CallContext, 'getAuthContext'>): HaHandlers => {
    const cert = call.getAuthContext().sslPeerCertificate;
    if (!cert?.raw) throw new PermissionDenied('a client certificate is required');
    const served = ha;
    if (served === undefined || issuerOf(cert.raw, fingerprintOf(cert.raw)) !== served) throw new PermissionDenied('this certificate may not relay requests to this node');
    return served.handlers;
  };
  const haHandlers = haServiceHandlers(admitHa, toStatus);

  const cutAll = (calls: Iterable<OpenCall>, status: CallStatus): void => {
    for (const call of [...calls]) call.cut(status);
  };

  const start = async (): Promise<{ server: grpc.Server; address: string }> => {
    const server = new grpc.Server(SERVER_OPTIONS);
    server.addService(definition, handlers);
    server.addService(loadHa().definition, haHandlers);
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(opts.address, credentials, (err, bound) => {
        if (!err) return resolve(bound);
        server.forceShutdown();
        reject(new Unavailable(`cannot listen on ${opts.address}: ${err.message}`, { cause: err }));
      });
    });
    const host = opts.address.slice(0, opts.address.lastIndexOf(':'));
    return { server, address: `${host}:${port}` };
  };

  /** Ended calls still flush their status; a peer that does not read is cut after the grace. */
  const stop = (server: grpc.Server): Promise<void> =>
    new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, opts.closeGraceMs ?? 1_000);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });

  /** Stops the listener once neither a kind nor the HA service is served. */
  const stopIfIdle = async (): Promise<void> => {
    if (kinds.size > 0 || ha !== undefined || !running) return;
    const { server } = running;
    running = undefined;
    await stop(server);
  };

  /** Removes one kind: its handshakes fail from now on and its open calls end. */
  const remove = async (served: Served): Promise<void> => {
    if (kinds.get(served.kind) !== served) return;
    kinds.delete(served.kind);
    credentials.delete(served.serverName);
    issuers.clear();
    cutAll([...served.open.values()].flatMap((calls) => [...calls]), shuttingDown());
    await stopIfIdle();
  };

  /** Removes the HA service: its handshakes fail from now on. */
  const removeHa = async (served: HaServed): Promise<void> => {
    if (ha !== served) return;
    ha = undefined;
    credentials.delete(served.serverName);
    issuers.clear();
    await stopIfIdle();
  };

  /** Starts the listener if nothing runs it yet; `undo` takes back the registration when it cannot. */
  const ensureRunning = async (undo: () => void): Promise<string> => {
    if (!running) {
      try {
        running = await start();
      } catch (e) {
        undo();
        throw e;
      }
    }
    return running.address;
  };

  /** A server name is one registration's: a kind's or the HA service's. */
  const claimName = (serverName: string, by: string): void => {
    const name = serverName.toLowerCase();
    for (const other of kinds.values()) {
      if (other.kind !== by && other.serverName.toLowerCase() === name) throw new InvalidRequest(`the cluster port already serves "${serverName}" for ${other.kind} replication`);
    }
    if (by !== HA_OWNER && ha?.serverName.toLowerCase() === name) throw new InvalidRequest(`the cluster port already serves "${serverName}" for HA forwarding`);
  };

  const serve = (registration: KindRegistration): Promise<ReplicationServer> =>
      serially(async () => {
        const { kind, tls } = registration;
        claimName(tls.serverName, kind);
        const previous = kinds.get(kind);
        if (previous) await remove(previous);
        const served: Served = { kind, serverName: tls.serverName, service: registration.service, ca: new X509Certificate(tls.caPem), open: new Map() };
        credentials.set(tls.serverName, tls);
        kinds.set(kind, served);
        issuers.clear();
        const address = await ensureRunning(() => {
          kinds.delete(kind);
          credentials.delete(tls.serverName);
        });
        return {
          address,
          disconnect(secondaryId) {
            const calls = served.open.get(secondaryId);
            if (calls) cutAll(calls, callStatus(grpc.status.PERMISSION_DENIED, 'secondary revoked'));
          },
          close: () => serially(() => remove(served)),
        };
      });

  return {
    serve,
    serveHa: ({ tls, handlers }) =>
      serially(async () => {
        claimName(tls.serverName, HA_OWNER);
        if (ha !== undefined) await removeHa(ha);
        const served: HaServed = { serverName: tls.serverName, handlers, ca: new X509Certificate(tls.caPem) };
        credentials.set(tls.serverName, tls);
        ha = served;
        issuers.clear();
        const address = await ensureRunning(() => {
          ha = undefined;
          credentials.delete(tls.serverName);
        });
        return { address, close: () => serially(() => removeHa(served)) };
      }),
    close: () =>
      serially(async () => {
        if (ha !== undefined) await removeHa(ha);
        for (const served of [...kinds.values()]) await remove(served);
      }),
  };
}
