/**
 * CLI-only failure kinds. A `UsageError` means the command line itself is wrong: it prints the
 * message and exits 2, as Vault's CLI does for usage errors.
 *
 *   throw new UsageError('expected key=value, got "foo"');
 */
import { ErrorCode, TesseraError } from '../core/index.js';

export class UsageError extends TesseraError {
  constructor(message: string) {
    super(ErrorCode.invalidRequest, message);
  }
}

/** A DR operation token generation attempt stands in the way (or ended without a token); exit 1. */
export class AttemptInProgress extends TesseraError {
  constructor(message: string) {
    super(ErrorCode.invalidRequest, message);
  }
}
