/**
 * The HA service of proto/ha.proto as the cluster server serves it (server.ts `serveHa`): its own
 * registration beside the replication kinds, under its own SNI name and CA, never a replication
 * kind. The registration carries one handler per RPC of the service, so a new RPC is one more
 * handler here and one more field in the caller's object.
 *
 *   const served = await cluster.serveHa({ tls: haServerTls, handlers: { forward: (req) => execute(req) } });
 *   await served.close();   // HA forwarding handshakes fail from now on; the kinds keep serving
 */
import type * as grpc from '@grpc/grpc-js';
import type { TlsMaterial } from '../../replication/index.js';
import { haWire, type HaHttpReply, type HaHttpRequest } from './ha.js';
import type { CallStatus } from './status.js';

/** One handler per RPC of the HA service; the active node's HA unit supplies them. */
export interface HaHandlers {
  /** Forward: runs a request a standby relayed and answers its bytes. */
  readonly forward: (req: HaHttpRequest) => Promise<HaHttpReply>;
}

export interface HaRegistration {
  /** caPem verifies the standbys' client certificates; certPem/keyPem are served under serverName. */
  readonly tls: TlsMaterial;
  readonly handlers: HaHandlers;
}

/** The HA service being served: close() removes it without touching the kinds. */
export interface HaServing {
  /** host:port actually bound. */
  readonly address: string;
  close(): Promise<void>;
}

type CallContext = Pick<grpc.ServerUnaryCall<unknown, unknown>, 'getAuthContext'>;

/**
 * The gRPC implementation of the HA service. `admit` checks the caller's certificate against the
 * HA registration's CA and answers its handlers (it throws PermissionDenied before any work).
 */
export function haServiceHandlers(admit: (call: CallContext) => HaHandlers, toStatus: (e: unknown) => CallStatus): grpc.UntypedServiceImplementation {
  type WireRequest = Parameters<typeof haWire.fromRequest>[0];
  type WireReply = ReturnType<typeof haWire.reply>;
  return {
    Forward: (call: grpc.ServerUnaryCall<WireRequest, WireReply>, callback: grpc.sendUnaryData<WireReply>) => {
      void (async () => {
        const handlers = admit(call);
        return haWire.reply(await handlers.forward(haWire.fromRequest(call.request)));
      })().then(
        (res) => callback(null, res),
        (e: unknown) => callback(toStatus(e)),
      );
    },
  };
}
