/**
 * The one error contract of the replication channel (transport.ts re-exports it): every failed
 * PrimaryClient call, and every WAL stream that ends in error, rejects with a ChannelError whose
 * `reason` says what the caller should do about it. The gRPC client maps a call's status to it in
 * one table (src/transport/grpc/status.ts); the loopback test channel throws it directly, turning
 * what the primary's service threw into what the caller sees through `reasonOfServiceCode`, the
 * same answer the gRPC server's status and the client's table give (status.test.ts checks they
 * agree for every ErrorCode). Callers branch on `e.reason` only after `e instanceof ChannelError`.
 *
 *   catch (e) { if (e instanceof ChannelError && e.refused) stopRetrying(e.message); }
 */
import { ErrorCode, TesseraError, isTesseraError } from '../core/errors.js';

/**
 * What a failed call means to the secondary. Whether the primary may have acted on it:
 * - not_sent: no ready connection to send the call on: it certainly never reached the primary
 *   (only calls that must tell "not sent" from "may have arrived" check first: forward).
 * - unavailable: the primary is unreachable, shutting down, busy, or the connection was lost
 *   (also the client was closed); retry with backoff. A call already sent may have been applied.
 * - deadline: no answer in time; for probing, try the next address. It may have been applied.
 * The primary answered, and refused (it did nothing):
 * - permission_denied: the certificate or the id is refused (revoked, unknown, not yet activated,
 *   a call its kind may not make); also an open call of a secondary revoked meanwhile.
 * - failed_precondition: the primary refuses in its current state (another kind, another set, an
 *   unknown or expired snapshot).
 * The call failed on one side:
 * - invalid_argument: a message broke the contract (a bug on one side).
 * - internal: the other side failed; details are in its log, never in the message.
 */
export const ChannelReason = {
  notSent: 'not_sent',
  unavailable: 'unavailable',
  deadline: 'deadline',
  permissionDenied: 'permission_denied',
  failedPrecondition: 'failed_precondition',
  invalidArgument: 'invalid_argument',
  internal: 'internal',
} as const;
export type ChannelReason = (typeof ChannelReason)[keyof typeof ChannelReason];

/** How a ChannelError surfaces past the replication layer (e.g. in an HTTP answer). */
const CODE_OF_REASON: Record<ChannelReason, ErrorCode> = {
  not_sent: ErrorCode.unavailable,
  unavailable: ErrorCode.unavailable,
  deadline: ErrorCode.unavailable,
  permission_denied: ErrorCode.permissionDenied,
  failed_precondition: ErrorCode.invalidRequest,
  invalid_argument: ErrorCode.invalidRequest,
  internal: ErrorCode.internal,
};

/** A replication call that failed, as the secondary sees it. `cause`: the transport's own error, if any. */
export class ChannelError extends TesseraError {
  constructor(
    readonly reason: ChannelReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(CODE_OF_REASON[reason], message, options);
  }

  /** The primary answered and refused the call: it did nothing, and retrying as is will not help. */
  get refused(): boolean {
    return this.reason === ChannelReason.permissionDenied || this.reason === ChannelReason.failedPrecondition;
  }
}

/**
 * A node of the primary cluster that is not its active node (an HA standby) answered, after the
 * same certificate checks the active node makes, and served nothing: the active node is at
 * `activeClusterAddr` (host:port), or undefined while no node is known to be active (an election
 * is in progress). `unavailable`, so a caller that knows nothing of it tries elsewhere; the
 * secondary's loop dials the named address next. On gRPC: UNAVAILABLE with the trailers
 * `tessera-not-active: 1` and `tessera-active-cluster-addr: host:port` (src/transport/grpc/status.ts).
 */
export class NotActiveNode extends ChannelError {
  constructor(
    readonly activeClusterAddr: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      ChannelReason.unavailable,
      activeClusterAddr === undefined
        ? 'this node of the primary cluster is an HA standby and knows no active node yet (an election is in progress): nothing was served; retry shortly'
        : `this node of the primary cluster is an HA standby: nothing was served; the active node is at ${activeClusterAddr}`,
      options,
    );
  }
}

/**
 * What an error the primary's service threw is to the caller. TesseraError messages are safe to
 * show the peer (errors.ts); Internal and anything else reach it as a bare "internal error".
 */
const REASON_OF_SERVICE_CODE: Record<ErrorCode, ChannelReason> = {
  [ErrorCode.invalidRequest]: ChannelReason.failedPrecondition,
  [ErrorCode.permissionDenied]: ChannelReason.permissionDenied,
  [ErrorCode.notFound]: ChannelReason.failedPrecondition,
  [ErrorCode.unsupportedOperation]: ChannelReason.failedPrecondition,
  [ErrorCode.sealed]: ChannelReason.unavailable,
  [ErrorCode.notInitialized]: ChannelReason.unavailable,
  [ErrorCode.unavailable]: ChannelReason.unavailable,
  [ErrorCode.storageFailed]: ChannelReason.unavailable,
  [ErrorCode.rateLimited]: ChannelReason.unavailable,
  [ErrorCode.payloadTooLarge]: ChannelReason.unavailable,
  [ErrorCode.internal]: ChannelReason.internal,
  [ErrorCode.auditFailed]: ChannelReason.internal,
  [ErrorCode.drSecondary]: ChannelReason.failedPrecondition,
  [ErrorCode.licenseRequired]: ChannelReason.failedPrecondition,
};

export function reasonOfServiceCode(code: ErrorCode): ChannelReason {
  return REASON_OF_SERVICE_CODE[code];
}

/** The ChannelError a caller sees for `error` thrown by the primary's service (an in-process channel's mapping). */
export function channelErrorOfService(error: unknown): ChannelError {
  if (error instanceof NotActiveNode) return new NotActiveNode(error.activeClusterAddr);
  if (isTesseraError(error) && error.code !== ErrorCode.internal) return new ChannelError(REASON_OF_SERVICE_CODE[error.code], error.message);
  return new ChannelError(ChannelReason.internal, 'internal error');
}
