/**
 * The `write` command's guard for replication paths. A failed `$(...)` in a script leaves
 * `token=` empty, and the API reads an empty `token` on update-primary as "forget the primary"
 * (Vault-compatible). The rule: under `sys/replication/`, `write` refuses every empty (or blank)
 * string value, whatever its source (k=, k=@file, k=-, a JSON body on stdin); a field left out
 * takes its default, so an empty value is never needed. Clearing a secondary's primary is asked
 * for with `-clear-primary`, which sends the empty token itself.
 *
 *   guardReplicationBody('sys/replication/dr/secondary/update-primary', { token: '' }, false) // throws UsageError
 */
import { UsageError } from './errors.js';

const REPLICATION = /^\/*(v1\/)?sys\/replication\//;
const UPDATE_PRIMARY = /^\/*(v1\/)?sys\/replication\/(dr|performance)\/secondary\/update-primary\/*$/;

export function isUpdatePrimary(path: string): boolean {
  return UPDATE_PRIMARY.test(path);
}

/** The body to send, or UsageError when it holds an empty value on a replication path. */
export function guardReplicationBody(path: string, body: Record<string, unknown>, clearPrimary: boolean): Record<string, unknown> {
  if (clearPrimary) {
    if (!isUpdatePrimary(path)) throw new UsageError('-clear-primary goes only with sys/replication/{dr,performance}/secondary/update-primary');
    if (body['token'] !== undefined || body['update_primary_addrs'] !== undefined) {
      throw new UsageError('-clear-primary sends an empty token itself: give neither token nor update_primary_addrs with it');
    }
  }
  if (REPLICATION.test(path)) {
    for (const [key, value] of Object.entries(body)) {
      if (typeof value !== 'string' || value.trim() !== '') continue;
      const clear = key === 'token' && isUpdatePrimary(path) ? '; to make the secondary forget its primary on purpose, pass -clear-primary' : '';
      throw new UsageError(
        `refusing an empty value for "${key}" on ${path}: an empty value is usually a failed $(...) in a script. ` +
          `Leave the field out to take its default${clear}`,
      );
    }
  }
  return clearPrimary ? { ...body, token: '' } : body;
}
