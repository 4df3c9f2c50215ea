/**
 * Serves a PrimaryService on the cluster port over mutual TLS. The handshake already refuses
 * peers without a certificate from the replication CA; per call the peer's certificate becomes a
 * `Peer` (DNS SAN = secondary id, SHA-256 fingerprint) and every method, Ping included, first
 * passes `service.authorize(peer, call)`: a revoked id cannot even probe.
 *
 *   const server = await serveReplication({ address: '0.0.0.0:8201', tls, service, log });
 *   server.disconnect('dr-east');   // revoke-secondary: its open calls end with PERMISSION_DENIED
 *   await server.close();
 */
import * as grpc from '@grpc/grpc-js';
import { PermissionDenied, Unavailable } from '../../core/errors.js';
import { fingerprintOf, identityOf } from '../../replication/pki.js';
import type { ClusterCall, Peer, PrimaryService, ReplicationServer, TlsMaterial } from '../../replication/transport.js';
import { decode, encode } from './codec.js';
import { MAX_MESSAGE_BYTES, loadReplication } from './proto.js';
import { CallSink } from './sink.js';
import { callStatus, statusOf, type CallStatus } from './status.js';
import type * as wire from './wire.js';

export interface ServeOptions {
  /** host:port; port 0 picks a free one (see `ReplicationServer.address`). */
  readonly address: string;
  /** caPem verifies client certificates; certPem/keyPem are the server leaf. */
  readonly tls: TlsMaterial;
  readonly service: PrimaryService;
  /** Receives errors that are answered as a bare INTERNAL (pino's logger fits). */
  readonly log?: { error(obj: unknown, msg?: string): void };
  /** How long close() lets ended calls flush before cutting connections. Default 1000 ms. */
  readonly closeGraceMs?: number;
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
};

type CallContext = Pick<grpc.ServerUnaryCall<unknown, unknown>, 'getAuthContext' | 'getPeer'>;

/** One open call, as disconnect() and close() need it. */
interface OpenCall {
  cut(status: CallStatus): void;
}

export async function serveReplication(opts: ServeOptions): Promise<ReplicationServer> {
  const { definition } = loadReplication();
  const { service, log } = opts;
  const server = new grpc.Server(SERVER_OPTIONS);
  const open = new Map<string, Set<OpenCall>>();
  let closing = false;
  let closed: Promise<void> | undefined;

  const toStatus = (error: unknown): CallStatus =>
    statusOf(error, (e) => log?.error({ err: e }, 'replication call failed'));

  const track = (id: string, call: OpenCall): (() => void) => {
    let calls = open.get(id);
    if (!calls) open.set(id, (calls = new Set()));
    calls.add(call);
    return () => {
      calls.delete(call);
      if (calls.size === 0 && open.get(id) === calls) open.delete(id);
    };
  };

  /** Who is calling; throws PermissionDenied (or Unavailable while closing) before any work. */
  const admit = (call: CallContext, kind: ClusterCall): Peer => {
    if (closing) throw new Unavailable('replication server is shutting down');
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
    const peer: Peer = { secondaryId, fingerprint: fingerprintOf(cert.raw), address: call.getPeer() };
    service.authorize(peer, kind);
    return peer;
  };

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
        untrack = track(peer.secondaryId, { cut: (s) => answer(s) });
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
      sink.onClose(track(peer.secondaryId, sink));
      try {
        service.streamWal(peer, { guard: req.guard, maxBatchEntries: req.maxBatchEntries }, sink);
      } catch (e) {
        sink.fail(e as Error);
      }
    },
  };
  server.addService(definition, handlers);

  const credentials = grpc.ServerCredentials.createSsl(
    Buffer.from(opts.tls.caPem),
    [{ cert_chain: Buffer.from(opts.tls.certPem), private_key: Buffer.from(opts.tls.keyPem) }],
    true,
  );
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(opts.address, credentials, (err, bound) => {
      if (!err) return resolve(bound);
      server.forceShutdown();
      reject(new Unavailable(`cannot listen on ${opts.address}: ${err.message}`, { cause: err }));
    });
  });
  const host = opts.address.slice(0, opts.address.lastIndexOf(':'));

  const cutAll = (calls: Iterable<OpenCall>, status: CallStatus): void => {
    for (const call of [...calls]) call.cut(status);
  };

  return {
    address: `${host}:${port}`,
    disconnect(secondaryId) {
      const calls = open.get(secondaryId);
      if (calls) cutAll(calls, callStatus(grpc.status.PERMISSION_DENIED, 'secondary revoked'));
    },
    close() {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        const shuttingDown = callStatus(grpc.status.UNAVAILABLE, 'replication server is shutting down');
        cutAll([...open.values()].flatMap((calls) => [...calls]), shuttingDown);
        // Ended calls still flush their status; a peer that does not read is cut after the grace.
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, opts.closeGraceMs ?? 1_000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return closed;
    },
  };
}
