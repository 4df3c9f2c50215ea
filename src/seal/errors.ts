/**
 * Errors of the seal's cryptography. A rejected ciphertext means storage handed back bytes that
 * were not written by a key we hold (tampering, corruption, a wrong root key); boundaries map it
 * like any internal failure, callers that expect it (unseal) catch it by class.
 *
 *   try { keyring.decrypt(ct, aad) } catch (e) { if (e instanceof CiphertextRejected) ... }
 */
import { ErrorCode, TesseraError } from '../core/errors.js';

export const RejectReason = {
  /** Too short, or an unknown format version. */
  malformed: 'malformed',
  /** Written under a keyring term this keyring does not hold. */
  unknownTerm: 'unknown-term',
  /** The GCM tag does not match: wrong key, wrong AAD, or altered bytes. */
  authentication: 'authentication',
} as const;
export type RejectReason = (typeof RejectReason)[keyof typeof RejectReason];

export class CiphertextRejected extends TesseraError {
  readonly reason: RejectReason;
  constructor(reason: RejectReason, message: string, options?: { cause?: unknown }) {
    super(ErrorCode.internal, message, options);
    this.reason = reason;
  }
}
