/**
 * The HA service of proto/ha.proto as the cluster server serves it (server.ts `serveHa`): its own
 * registration beside the replication kinds, under its own SNI name and CA, never a replication
 * kind. The registration carries one handler per RPC of the service, so a new RPC is one more
 * handler here and one more field in the caller's object.
 *
 *   const served = await cluster.serveHa({ tls: haServerTls, handlers: { forward: (req) => execute(req), readLease: (s) => leases.accept(s) } });
 *   await served.close();   // HA forwarding handshakes fail from now on; the kinds keep serving
 */
import * as grpc from '@grpc/grpc-js';
import type { LeaseDown, LeaseUp } from '../../core/ha/read-lease.js';
import type { TlsMaterial } from '../../replication/index.js';
import { haWire, leaseDuplex, leaseWire, type HaHttpReply, type HaHttpRequest, type LeaseDuplex } from './ha.js';
import type { CallStatus } from './status.js';

/** One handler per RPC of the HA service; the active node's HA unit supplies them. */
export interface HaHandlers {
  /** Forward: runs a request a standby relayed and answers its bytes. */
  readonly forward: (req: HaHttpRequest) => Promise<HaHttpReply>;
  /** ReadLease: takes a performance standby's read-lease stream (none: such a stream is refused). */
  readonly readLease?: (stream: LeaseDuplex<LeaseUp, LeaseDown>) => void;
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
  type WireUp = Parameters<typeof leaseWire.fromUp>[0];
  type WireDown = ReturnType<typeof leaseWire.down>;
  return {
    ReadLease: (call: grpc.ServerDuplexStream<WireUp, WireDown>) => {
      let take: HaHandlers['readLease'];
      try {
        take = admit(call).readLease;
      } catch {
        take = undefined;
      }
      if (take === undefined) {
        call.emit('error', { code: grpc.status.PERMISSION_DENIED, details: 'this certificate may not hold a read lease on this node' });
        return;
      }
      take(leaseDuplex<LeaseUp, LeaseDown, WireUp, WireDown>(call, leaseWire.fromUp, leaseWire.down));
    },
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
