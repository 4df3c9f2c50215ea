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

export interface SecretsEngine {
  handle(req: LogicalRequest, storage: Store): Promise<LogicalResponse | null>;
}
