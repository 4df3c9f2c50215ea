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

/** A `-wait` (or a failover step's wait) reached its deadline before the node got there; exit 1. */
export class WaitTimedOut extends TesseraError {
  constructor(message: string) {
    super(ErrorCode.unavailable, message);
  }
}

/** A failover or failback step could not be done (the node is in a role the step cannot act on); exit 1. */
export class StepRefused extends TesseraError {
  constructor(message: string) {
    super(ErrorCode.invalidRequest, message);
  }
}
