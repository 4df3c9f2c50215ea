/**
 * The one error <-> gRPC status table of the replication channel. The server turns a thrown
 * TesseraError into a status through `statusOf` (unknown and internal errors become a bare
 * INTERNAL that leaks nothing); the client turns a failed call back into a ChannelError whose
 * `reason` says what the secondary should do about it.
 *
 *   callback(statusOf(err));                                  // server
 *   catch (e) { if (e instanceof ChannelError && e.reason === 'permission_denied') ... } // client
 */
import { status as Status, type ServiceError, type StatusObject, Metadata } from '@grpc/grpc-js';
import { ErrorCode, TesseraError, isTesseraError } from '../../core/errors.js';
import { MalformedMessage } from './codec.js';

/**
 * What a failed call means to the secondary:
 * - unavailable: the primary is unreachable, shutting down or busy; retry with backoff.
 * - permission_denied: the certificate or the id is refused (revoked, unknown, foreign CA).
 * - failed_precondition: the primary refuses in its current state (version, mode, expired snapshot).
 * - invalid_argument: a message broke the contract (a bug on one side).
 * - deadline: no answer in time; for probing, try the next address.
 * - internal: the other side failed; details are in its log.
 * - not_sent: no ready connection to send the call on: it certainly never reached the primary
 *   (only calls that must tell "not sent" from "may have arrived" check first: forward).
 */
export const ChannelReason = {
  unavailable: 'unavailable',
  permissionDenied: 'permission_denied',
  failedPrecondition: 'failed_precondition',
  invalidArgument: 'invalid_argument',
  deadline: 'deadline',
  internal: 'internal',
  notSent: 'not_sent',
} as const;
export type ChannelReason = (typeof ChannelReason)[keyof typeof ChannelReason];

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
  [ErrorCode.drSecondary]: Status.FAILED_PRECONDITION,
  [ErrorCode.licenseRequired]: Status.FAILED_PRECONDITION,
};

/** gRPC status -> ChannelReason, for every status a call can end with. */
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

/** How a ChannelError surfaces past the replication layer (e.g. in an HTTP answer). */
const CODE_OF_REASON: Record<ChannelReason, ErrorCode> = {
  unavailable: ErrorCode.unavailable,
  permission_denied: ErrorCode.permissionDenied,
  failed_precondition: ErrorCode.invalidRequest,
  invalid_argument: ErrorCode.invalidRequest,
  deadline: ErrorCode.unavailable,
  internal: ErrorCode.internal,
  not_sent: ErrorCode.unavailable,
};

/** A replication call that failed, as the secondary sees it. */
export class ChannelError extends TesseraError {
  constructor(
    readonly reason: ChannelReason,
    readonly grpcCode: Status,
    details: string,
    options?: { cause?: unknown },
  ) {
    super(CODE_OF_REASON[reason], details, options);
  }
}

export type CallStatus = Partial<StatusObject> & { code: Status; details: string };

/**
 * The status a server answers for `error`. Messages of TesseraErrors are safe to show the peer
 * (errors.ts); anything else, and Internal, is reported to `onInternal` and answered generically.
 */
export function statusOf(error: unknown, onInternal?: (error: unknown) => void): CallStatus {
  if (error instanceof MalformedMessage) return callStatus(Status.INVALID_ARGUMENT, error.message);
  if (isTesseraError(error) && error.code !== ErrorCode.internal) return callStatus(STATUS_OF_CODE[error.code], error.message);
  onInternal?.(error);
  return callStatus(Status.INTERNAL, 'internal error');
}

export function callStatus(code: Status, details: string): CallStatus {
  return { code, details, metadata: new Metadata() };
}

/** The ChannelError for a failed call: a grpc ServiceError, a message that broke the contract, or else internal. */
export function channelErrorOf(error: unknown): ChannelError {
  if (error instanceof ChannelError) return error;
  if (isServiceError(error)) {
    return new ChannelError(REASON_OF_STATUS[error.code] ?? ChannelReason.internal, error.code, error.details || error.message, {
      cause: error,
    });
  }
  if (error instanceof MalformedMessage) {
    return new ChannelError(ChannelReason.invalidArgument, Status.INVALID_ARGUMENT, error.message, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ChannelError(ChannelReason.internal, Status.INTERNAL, message, { cause: error });
}

export function isServiceError(e: unknown): e is ServiceError {
  return e instanceof Error && typeof (e as Partial<ServiceError>).code === 'number' && 'details' in e;
}
