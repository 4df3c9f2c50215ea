/**
 * Who is calling: the validated token's identity and what its policies allow.
 */
import type { GrantCapability } from './policy.js';
import type { TokenEntryView } from './token-entry.js';

export interface Caller {
  readonly token: string;
  /** The token's entry as validated for this request (num_uses already spent). */
  readonly entry: TokenEntryView;
  readonly accessor: string;
  readonly policies: readonly string[];
  /** Namespace the token belongs to (`a/` or ''). */
  readonly namespace: string;
  /** Holds the root policy: may do anything, including create children with any policy. */
  readonly root: boolean;
  /** Capability check on a path relative to the caller's namespace. */
  allows(path: string, capability: GrantCapability): boolean;
}
