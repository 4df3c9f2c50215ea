/**
 * proto/replication.proto as grpc-js sees it: the loader (whose options fix the shapes in wire.ts),
 * the typed generated client, and the limits both ends share.
 *
 *   const { definition, Client } = loadReplication();
 *   server.addService(definition, handlers);
 *   const raw = new Client(address, credentials, options) as unknown as RawClient;
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type * as wire from './wire.js';

/** From src/transport/grpc (jest) and dist/transport/grpc (built) alike this is <repo>/proto. */
const PROTO_PATH = fileURLToPath(new URL('../../../proto/replication.proto', import.meta.url));

const LOADER_OPTIONS: protoLoader.Options = { longs: String, enums: String, defaults: true, oneofs: true };

/** Fully qualified service name; also the prefix of every method path. */
export const SERVICE_NAME = 'tessera.replication.v1.Replication';

/** WAL batches and value pages can be large; both ends accept up to this much in one message. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface LoadedReplication {
  readonly definition: grpc.ServiceDefinition;
  readonly Client: grpc.ServiceClientConstructor;
}

/** Parses the .proto (a few ms); callers load once per server or client, never per call. */
export function loadReplication(): LoadedReplication {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, LOADER_OPTIONS));
  const Client = SERVICE_NAME.split('.').reduce<unknown>(
    (node, part) => (node as Record<string, unknown> | undefined)?.[part],
    pkg,
  ) as grpc.ServiceClientConstructor | undefined;
  if (typeof Client !== 'function') throw new Error(`${PROTO_PATH} does not define ${SERVICE_NAME}`);
  return { definition: Client.service, Client };
}

/** A generated unary method. */
export type Unary<Req, Res> = (
  request: Req,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response?: Res) => void,
) => grpc.ClientUnaryCall;

/** The generated client, typed: method names as in the .proto. */
export interface RawClient extends grpc.Client {
  Ping: Unary<wire.PingRequest, wire.PingResponse>;
  Bootstrap: Unary<wire.BootstrapRequest, wire.BootstrapResponse>;
  StreamWal(request: wire.StreamRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<wire.StreamMessage>;
  Heartbeat: Unary<wire.HeartbeatRequest, wire.HeartbeatResponse>;
  OpenSnapshot: Unary<wire.OpenSnapshotRequest, wire.SnapshotInfo>;
  CloseSnapshot: Unary<wire.SnapshotRef, wire.Empty>;
  PageHashes: Unary<wire.PageHashesRequest, wire.HashList>;
  SubpageHashes: Unary<wire.SubpageHashesRequest, wire.HashList>;
  Leaves: Unary<wire.LeavesRequest, wire.LeafList>;
  FetchValues: Unary<wire.FetchValuesRequest, wire.ValueList>;
  Forward: Unary<wire.ForwardRequest, wire.ForwardResponse>;
}
