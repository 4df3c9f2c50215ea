/**
 * Failures of a request made through the client. `ApiError` is a non-2xx answer and keeps the
 * node's status and `errors` list; `ConnectionFailed` means no answer arrived at all;
 * `MalformedResponse` is a 2xx answer whose body is not JSON.
 *
 *   try { await client.read('secret/x'); }
 *   catch (e) { if (e instanceof ApiError && e.status === 403) ... }
 */
import { ErrorCode, TesseraError } from '../core/index.js';

/** Best-effort code for a status; `status` stays the authoritative fact. */
const codeByStatus: Readonly<Record<number, ErrorCode>> = {
  400: ErrorCode.invalidRequest,
  403: ErrorCode.permissionDenied,
  404: ErrorCode.notFound,
  405: ErrorCode.unsupportedOperation,
  413: ErrorCode.payloadTooLarge,
  429: ErrorCode.rateLimited,
  503: ErrorCode.unavailable,
};

export class ApiError extends TesseraError {
  readonly status: number;
  readonly method: string;
  readonly url: string;
  /** The `errors` array of the body; empty when the body had none (e.g. a 404 read). */
  readonly errors: string[];
  constructor(init: { status: number; method: string; url: string; errors: string[] }) {
    const messages = init.errors.length > 0 ? init.errors : [`HTTP ${init.status}`];
    super(codeByStatus[init.status] ?? ErrorCode.internal, messages);
    this.status = init.status;
    this.method = init.method;
    this.url = init.url;
    this.errors = init.errors;
  }
}

/** The request never got an HTTP answer (refused, reset, DNS, TLS). The cause is kept. */
export class ConnectionFailed extends TesseraError {
  readonly url: string;
  constructor(url: string, cause: unknown) {
    super(ErrorCode.unavailable, `${url}: ${describeCause(cause)}`, { cause });
    this.url = url;
  }
}

/** A 2xx answer whose body is not the JSON the endpoint promises. */
export class MalformedResponse extends TesseraError {
  readonly status: number;
  readonly url: string;
  constructor(url: string, status: number, why: string) {
    super(ErrorCode.internal, `${url}: malformed response (HTTP ${status}): ${why}`);
    this.status = status;
    this.url = url;
  }
}

/**
 * fetch wraps the socket error in a TypeError("fetch failed"); the useful part is its cause.
 * Duck-typed because the error may come from another realm (jest's VM contexts).
 */
function describeCause(cause: unknown): string {
  const message = (e: unknown): string | undefined =>
    typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string'
      ? (e as { message: string }).message
      : undefined;
  const inner: unknown = typeof cause === 'object' && cause !== null ? (cause as { cause?: unknown }).cause : undefined;
  return message(inner) ?? message(cause) ?? String(cause);
}
