/**
 * The one error <-> gRPC status table of the replication channel. The server turns a thrown
 * TesseraError into a status through `statusOf` (unknown and internal errors become a bare
 * INTERNAL that leaks nothing); the client turns a failed call back into the channel's
 * ChannelError (src/replication/channel-error.ts), whose `reason` says what to do about it.
 *
 *   callback(statusOf(err));                                  // server
 *   catch (e) { if (e instanceof ChannelError && e.reason === 'permission_denied') ... } // client
 */
import { status as Status, type ServiceError, type StatusObject, Metadata } from '@grpc/grpc-js';
import { ErrorCode, isTesseraError } from '../../core/errors.js';
import { ChannelError, ChannelReason, NotActiveNode } from '../../replication/index.js';
import { MalformedMessage } from './codec.js';

/** TesseraError code -> gRPC status. InvalidRequest from a service means "refused in this state". */
const STATUS_OF_CODE: Record<ErrorCode, Status> = {
  [ErrorCode.invalidRequest]: Status.FAILED_PRECONDITION,
  [ErrorCode.permissionDenied]: Status.PERMISSION_DENIED,
  [ErrorCode.notFound]: Status.NOT_FOUND,
  [ErrorCode.unsupportedOperation]: Status.UNIMPLEMENTED,
  [ErrorCode.sealed]: Status.UNAVAILABLE,
  [ErrorCode.notInitialized]: Status.UNAVAILABLE,
  [ErrorCode.unavailable]: Status.UNAVAILABLE,
  [ErrorCode.storageFailed]: Status.UNAVAILABLE,
  [ErrorCode.rateLimited]: Status.RESOURCE_EXHAUSTED,
  [ErrorCode.payloadTooLarge]: Status.RESOURCE_EXHAUSTED,
  [ErrorCode.internal]: Status.INTERNAL,
  [ErrorCode.auditFailed]: Status.INTERNAL,
  [ErrorCode.drSecondary]: Status.FAILED_PRECONDITION,
  [ErrorCode.licenseRequired]: Status.FAILED_PRECONDITION,
};

/**
 * gRPC status -> ChannelReason, for every status a call can end with: the client's one table.
 * Composed with STATUS_OF_CODE it gives channel-error.ts's reasonOfServiceCode (status.test.ts).
 */
const REASON_OF_STATUS: Record<Status, ChannelReason> = {
  [Status.OK]: ChannelReason.internal,
  [Status.CANCELLED]: ChannelReason.unavailable,
  [Status.UNKNOWN]: ChannelReason.internal,
  [Status.INVALID_ARGUMENT]: ChannelReason.invalidArgument,
  [Status.DEADLINE_EXCEEDED]: ChannelReason.deadline,
  [Status.NOT_FOUND]: ChannelReason.failedPrecondition,
  [Status.ALREADY_EXISTS]: ChannelReason.failedPrecondition,
  [Status.PERMISSION_DENIED]: ChannelReason.permissionDenied,
  [Status.RESOURCE_EXHAUSTED]: ChannelReason.unavailable,
  [Status.FAILED_PRECONDITION]: ChannelReason.failedPrecondition,
  [Status.ABORTED]: ChannelReason.failedPrecondition,
  [Status.OUT_OF_RANGE]: ChannelReason.invalidArgument,
  [Status.UNIMPLEMENTED]: ChannelReason.failedPrecondition,
  [Status.INTERNAL]: ChannelReason.internal,
  [Status.UNAVAILABLE]: ChannelReason.unavailable,
  [Status.DATA_LOSS]: ChannelReason.internal,
  [Status.UNAUTHENTICATED]: ChannelReason.permissionDenied,
};

export type CallStatus = Partial<StatusObject> & { code: Status; details: string };

/**
 * The status a server answers for `error`. Messages of TesseraErrors are safe to show the peer
 * (errors.ts); anything else, and Internal, is reported to `onInternal` and answered generically.
 */
export function statusOf(error: unknown, onInternal?: (error: unknown) => void): CallStatus {
  if (error instanceof NotActiveNode) return notActiveStatus(error);
  if (error instanceof MalformedMessage) return callStatus(Status.INVALID_ARGUMENT, error.message);
  if (isTesseraError(error) && error.code !== ErrorCode.internal) return callStatus(STATUS_OF_CODE[error.code], error.message);
  onInternal?.(error);
  return callStatus(Status.INTERNAL, 'internal error');
}

export function callStatus(code: Status, details: string): CallStatus {
  return { code, details, metadata: new Metadata() };
}

/** The trailer that marks a standby's refusal (NotActiveNode), and the one naming the active node. */
export const NOT_ACTIVE_KEY = 'tessera-not-active';
export const ACTIVE_CLUSTER_ADDR_KEY = 'tessera-active-cluster-addr';

/** An HA standby's answer: UNAVAILABLE, marked, with the active node's address when it knows it. */
function notActiveStatus(error: NotActiveNode): CallStatus {
  const status = callStatus(Status.UNAVAILABLE, error.message);
  status.metadata?.set(NOT_ACTIVE_KEY, '1');
  if (error.activeClusterAddr !== undefined) status.metadata?.set(ACTIVE_CLUSTER_ADDR_KEY, error.activeClusterAddr);
  return status;
}

/** The NotActiveNode a marked UNAVAILABLE carries, else undefined. */
function notActiveOf(error: ServiceError): NotActiveNode | undefined {
  if (error.code !== Status.UNAVAILABLE || error.metadata?.get(NOT_ACTIVE_KEY)[0] !== '1') return undefined;
  const addr = error.metadata.get(ACTIVE_CLUSTER_ADDR_KEY)[0];
  return new NotActiveNode(typeof addr === 'string' && addr !== '' ? addr.slice(0, 300) : undefined, { cause: error });
}

/**
 * The ChannelError for a failed call: a grpc ServiceError (its status is the `cause`'s `code`), a
 * message that broke the contract, or else internal.
 */
export function channelErrorOf(error: unknown): ChannelError {
  if (error instanceof ChannelError) return error;
  if (isServiceError(error)) {
    const notActive = notActiveOf(error);
    if (notActive !== undefined) return notActive;
    return new ChannelError(REASON_OF_STATUS[error.code] ?? ChannelReason.internal, error.details || error.message, { cause: error });
  }
  if (error instanceof MalformedMessage) return new ChannelError(ChannelReason.invalidArgument, error.message, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new ChannelError(ChannelReason.internal, message, { cause: error });
}

/** The gRPC status a ChannelError came from, when it came from one. */
export function grpcCodeOf(error: ChannelError): Status | undefined {
  return isServiceError(error.cause) ? error.cause.code : undefined;
}

/** TesseraError code -> the reason a client reads, through both tables (status.test.ts holds it to channel-error.ts). */
export function reasonAcrossGrpc(code: ErrorCode): ChannelReason {
  return REASON_OF_STATUS[STATUS_OF_CODE[code]];
}

export function isServiceError(e: unknown): e is ServiceError {
  return e instanceof Error && typeof (e as Partial<ServiceError>).code === 'number' && 'details' in e;
}
