/**
 * The contract between the router and a secrets engine mounted at a path. The router strips the
 * mount prefix, validates the token and ACL, and hands the engine a request and a Store scoped to
 * the mount's storage prefix.
 *
 *   const res = await engine.handle({ operation: 'read', path: 'data/app', data: { version: '2' } }, scoped);
 *   // res === null means "204 No Content"; throw NotFound() for a read that finds nothing.
 */
import type { Store } from '../storage/store.js';

export const Operation = {
  read: 'read',
  create: 'create',
  update: 'update',
  delete: 'delete',
  list: 'list',
  patch: 'patch',
} as const;
export type Operation = (typeof Operation)[keyof typeof Operation];

export interface LogicalRequest {
  readonly operation: Operation;
  /** Relative to the mount, no leading slash ('' for the mount root). */
  readonly path: string;
  /** The JSON body for writes; for reads and lists, the query parameters. */
  readonly data: Readonly<Record<string, unknown>>;
}

export interface LogicalResponse {
  readonly data?: Record<string, unknown> | null;
  readonly warnings?: string[];
}

/** One parameter of a path, as path help lists it (Vault's field type names: string, int, bool, map, slice, duration (sec)). */
export interface HelpField {
  readonly name: string;
  readonly type: string;
  readonly description: string;
  /** Where it goes: a segment of the path, the query string (reads, lists) or the JSON body. */
  readonly in: 'path' | 'query' | 'body';
  readonly required: boolean;
}

/**
 * What path help says about a path (Vault's `?help=1`, `vault path-help`): the pattern that
 * matched, a one-line synopsis, what each operation does, its parameters, and a longer description.
 */
export interface PathHelp {
  /** Namespace-relative, in route notation (`:name` one segment, `*name` the rest). */
  readonly pattern: string;
  readonly synopsis: string;
  readonly operations: Readonly<Partial<Record<Operation, string>>>;
  readonly fields: readonly HelpField[];
  readonly description: string;
}

export interface SecretsEngine {
  handle(req: LogicalRequest, storage: Store): Promise<LogicalResponse | null>;
  /** The help of a mount-relative path (pattern mount-relative too); the engine's overview when no path of it matches. */
  help?(path: string): PathHelp;
}
