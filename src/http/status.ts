/**
 * The one table from typed errors to HTTP statuses. Unknown errors become a 500 whose body says
 * nothing about the cause; the caller logs the cause.
 */
import { ErrorCode, isTesseraError } from '../core/errors.js';

const STATUS: Readonly<Record<ErrorCode, number>> = {
  [ErrorCode.invalidRequest]: 400,
  [ErrorCode.drSecondary]: 400,
  [ErrorCode.licenseRequired]: 400,
  [ErrorCode.permissionDenied]: 403,
  [ErrorCode.notFound]: 404,
  [ErrorCode.unsupportedOperation]: 405,
  [ErrorCode.payloadTooLarge]: 413,
  [ErrorCode.rateLimited]: 429,
  [ErrorCode.sealed]: 503,
  [ErrorCode.notInitialized]: 503,
  [ErrorCode.unavailable]: 503,
  [ErrorCode.storageFailed]: 503,
  [ErrorCode.internal]: 500,
  [ErrorCode.auditFailed]: 500,
};

export function errorReply(e: unknown): { status: number; body: { errors: string[] }; internal: boolean } {
  if (isTesseraError(e) && e.code !== ErrorCode.internal) {
    return { status: STATUS[e.code], body: { errors: e.messages }, internal: false };
  }
  return { status: 500, body: { errors: ['internal error'] }, internal: true };
}
