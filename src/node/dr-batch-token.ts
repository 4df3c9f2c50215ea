/**
 * A batch token as a DR operation token (as Vault 1.10+): a DR secondary accepts a batch token its
 * primary made, without share holders, when the token's policies (as replicated to the secondary)
 * grant `update` on the DR secondary path being called. It is verified (seal, expiry, the
 * replicated deny list, a non-orphan's parent) and never stored or spent here.
 *
 *   const check = batchOperationTokenCheck(core);
 *   await check(token, 'sys/replication/dr/secondary/promote');   // PermissionDenied (403) if not
 *
 * The DR secondary paths live in the root namespace, so only a root-namespace token can reach them
 * (a token of a child namespace is refused like an unknown one).
 */
import { PermissionDenied } from '../core/errors.js';
import type { VaultCore } from '../vault/core.js';

export { isBatchToken } from '../vault/batch-tokens.js';

export function batchOperationTokenCheck(core: VaultCore): (token: string, path: string) => Promise<void> {
  return async (token, path) => {
    const entry = await core.tokens.lookup(token, '');
    if (entry === undefined || entry.type !== 'batch' || entry.namespace_path !== '') throw new PermissionDenied('invalid DR operation token');
    // Fresh from storage: a DR secondary's policy cache does not follow what replication applies.
    const acl = await core.policies.freshAcl('', entry.policies);
    if (!acl.allows(path, 'update')) throw new PermissionDenied();
  };
}
