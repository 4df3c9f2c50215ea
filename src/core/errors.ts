/**
 * Typed errors: one class per failure kind, each with a stable `code`. Boundaries (HTTP, gRPC) map
 * codes to statuses through one table each; nothing ever branches on an error's message.
 *
 *   throw new InvalidRequest('missing required field "id"');
 *   if (isTesseraError(e) && e.code === 'sealed') ...
 */
export const ErrorCode = {
  invalidRequest: 'invalid_request',
  permissionDenied: 'permission_denied',
  notFound: 'not_found',
  unsupportedOperation: 'unsupported_operation',
  sealed: 'sealed',
  notInitialized: 'not_initialized',
  unavailable: 'unavailable',
  rateLimited: 'rate_limited',
  payloadTooLarge: 'payload_too_large',
  internal: 'internal',
  drSecondary: 'dr_secondary',
  licenseRequired: 'license_required',
  storageFailed: 'storage_failed',
  auditFailed: 'audit_failed',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export class TesseraError extends Error {
  readonly code: ErrorCode;
  /** Messages safe to show a client; never contain secrets. */
  readonly messages: string[];
  constructor(code: ErrorCode, messages: string | string[], options?: { cause?: unknown }) {
    const list = Array.isArray(messages) ? messages : [messages];
    super(list.join('; '), options);
    this.code = code;
    this.messages = list;
    this.name = new.target.name;
  }
}

/** 400: bad input, or an operation refused in the current state. */
export class InvalidRequest extends TesseraError {
  constructor(messages: string | string[], options?: { cause?: unknown }) {
    super(ErrorCode.invalidRequest, messages, options);
  }
}
/** 403: missing, invalid, expired token, or a policy that does not grant the capability. */
export class PermissionDenied extends TesseraError {
  constructor(message = 'permission denied', options?: { cause?: unknown }) {
    super(ErrorCode.permissionDenied, message, options);
  }
}
/** 404: unknown path, or a read that found nothing (then with no message). */
export class NotFound extends TesseraError {
  constructor(messages: string | string[] = [], options?: { cause?: unknown }) {
    super(ErrorCode.notFound, messages, options);
  }
}
/**
 * A 404 that still carries a body: Vault answers a read of a deleted or destroyed KV version with
 * status 404 *and* the version's metadata (its RespondWithStatusCode). It is a NotFound for every
 * boundary that only knows codes; the HTTP layer answers `data` in Vault's envelope with the 404.
 */
export class NotFoundWithData extends NotFound {
  readonly data: Record<string, unknown>;
  constructor(data: Record<string, unknown>) {
    super();
    this.data = data;
  }
}
/**
 * 400 that still answers data: Vault's RespondWithStatusCode for a batch with failed items
 * (transit's `batch_results`, every item's outcome); the HTTP layer answers `data` in Vault's
 * envelope with the 400 and no `errors`.
 */
export class InvalidRequestWithData extends InvalidRequest {
  readonly data: Record<string, unknown>;
  constructor(message: string, data: Record<string, unknown>) {
    super(message);
    this.data = data;
  }
}
/** 405: the path exists but not with this method. */
export class UnsupportedOperation extends TesseraError {
  constructor(message = 'unsupported operation', options?: { cause?: unknown }) {
    super(ErrorCode.unsupportedOperation, message, options);
  }
}
/** 503: the barrier is sealed. */
export class Sealed extends TesseraError {
  constructor(message = 'Vault is sealed') {
    super(ErrorCode.sealed, message);
  }
}
/** 503: the node has never been initialised. */
export class NotInitialized extends TesseraError {
  constructor(message = 'Vault is not initialized') {
    super(ErrorCode.notInitialized, message);
  }
}
/** 503: temporarily unable, e.g. replication still catching up. */
export class Unavailable extends TesseraError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.unavailable, message, options);
  }
}
/**
 * 503: a performance secondary may not apply a write of a replicated key itself (it would diverge
 * from its primary). The HTTP dispatcher forwards the request to the primary when it sees this
 * (REPLICATION.md 8); where it cannot (no forwarder, a login, a public route) the client gets 503.
 */
export class ReplicatedWriteRefused extends TesseraError {
  constructor(message: string) {
    super(ErrorCode.unavailable, message);
  }
}
/**
 * 503: an HA standby writes nothing itself; every write refuses with this before reaching storage.
 * A request the standby began to serve because it looked like a read and that turns out to write
 * (a token's last use, a wrapped answer) is relayed whole to the active node when the HTTP layer
 * sees this; nothing was written here.
 */
export class StandbyWriteRefused extends TesseraError {
  constructor(message: string) {
    super(ErrorCode.unavailable, message);
  }
}
/**
 * 503: a write that must go to the primary could not be forwarded (the primary is unreachable,
 * refused this secondary, or did not answer in time). The message says whether the write is known
 * not to have happened or its outcome is unknown (a deadline after sending).
 */
export class ForwardFailed extends TesseraError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.unavailable, message, options);
  }
}
/**
 * 503: the storage engine stopped acknowledging writes after a storage error (a failed write whose
 * outcome on disk is unknown, an I/O error or LevelDB corruption). Sticky until the node restarts;
 * the message names the error and what to do, and holds no secret (LevelDB's status and file path).
 */
export class StorageFailed extends TesseraError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.storageFailed, message, options);
  }
}
/** Vault's words when an HA standby knows of no active node (http/handler.go). */
export const NO_ACTIVE_NODE = 'local node not active but active cluster node not found';

/**
 * 503 from an HA standby: no active node is known, or the one known cannot be reached or did not
 * confirm it is active; nothing was sent to it. The message opens with Vault's words
 * (NO_ACTIVE_NODE) and says why.
 */
export class NoActiveNode extends TesseraError {
  constructor(message: string = NO_ACTIVE_NODE) {
    super(ErrorCode.unavailable, message);
  }
}
/**
 * 503: a request an HA standby relayed did not get the active node's answer. `outcome` says
 * whether it is known that nothing was written (the active node refused it, or this node changed
 * role before sending it) or the outcome is unknown (sent, and the answer was lost); the message
 * says the same to the client.
 */
export class RelayFailed extends TesseraError {
  constructor(
    readonly outcome: 'not_written' | 'unknown',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(ErrorCode.unavailable, message, options);
  }
}
/**
 * 503: an HA standby could not bring itself up to the shared database before answering a request
 * itself that must not be answered stale (a token-checked local path); nothing was done.
 */
export class StandbyNotCurrent extends TesseraError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.unavailable, message, options);
  }
}
/** 413: request body larger than the configured limit. */
export class PayloadTooLarge extends TesseraError {
  constructor(message = 'request body too large') {
    super(ErrorCode.payloadTooLarge, message);
  }
}
/** 400 with Vault's fixed wording for a path a DR secondary does not serve. */
export class DrSecondaryPathDisabled extends TesseraError {
  constructor() {
    super(ErrorCode.drSecondary, 'path disabled in replication DR secondary mode');
  }
}
/**
 * 400: an endpoint that acts on the node as a whole (seal, metrics, replication, storage) was
 * called from a child namespace; no namespace policy can grant it.
 */
export class RootNamespaceOnly extends TesseraError {
  constructor(endpoint: string) {
    super(ErrorCode.invalidRequest, `${endpoint} is restricted to the root namespace`);
  }
}
/** 400: the license does not carry the feature an endpoint needs. */
export class LicenseRequired extends TesseraError {
  constructor(feature: string, why: string) {
    super(ErrorCode.licenseRequired, `feature "${feature}" is not licensed: ${why}`);
  }
}
/** 500: an invariant was broken; the message is logged, never sent to a client. */
export class Internal extends TesseraError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.internal, message, options);
  }
}

/**
 * 500: no enabled audit device could record a request (it was refused and nothing was done) or
 * its response (the operation was applied); the message says which, and is shown to the client.
 */
export class AuditFailed extends TesseraError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.auditFailed, message, options);
  }
}

export function isTesseraError(e: unknown): e is TesseraError {
  return e instanceof TesseraError;
}
