/**
 * The vault core as replication sees it (replication/catalog.ts declares what it needs, so
 * neither folder imports the other): the store and the barrier's reopen and reload, wrapping and
 * revocation, the catalog the paths filters judge, what a new performance primary prepares, and
 * a batch token as a DR operation token.
 *
 *   const unit = await ReplicationUnit.create({ ..., vault: vaultCatalog(core) });
 *
 * A batch token serves as a DR operation token as in Vault 1.10+: a DR secondary accepts a batch
 * token its primary made, without share holders, when the token's policies (as replicated to the
 * secondary) grant `update` on the DR secondary path being called. It is verified (seal, expiry,
 * the replicated deny list, a non-orphan's parent) and never stored or spent here. The DR
 * secondary paths live in the root namespace, so only a root-namespace token can reach them (a
 * token of a child namespace is refused like an unknown one).
 */
import { PermissionDenied } from '../core/errors.js';
import type { VaultCatalog } from '../replication/index.js';
import { isBatchToken } from '../vault/batch-tokens.js';
import type { VaultCore } from '../vault/core.js';
import { loadFilterCatalog } from '../vault/filter-catalog.js';

export function vaultCatalog(core: VaultCore): VaultCatalog {
  return {
    store: () => core.store(),
    reopen: () => core.reopen(),
    reload: () => core.reload(),
    wrap: (data, ttl, path) => core.wrapping.wrap({ data }, ttl, path),
    revokeAccessor: async (accessor) => {
      await core.tokens.revokeAccessor(accessor);
    },
    restoreRoot: async (token) => {
      await core.tokens.createRoot({ id: token });
    },
    sealed: () => core.sealed(),
    filterCatalog: () => loadFilterCatalog(core.store()),
    migrateLegacyTables: async () => {
      await core.mounts.migrateLegacyTables();
      await core.auth.table.migrateLegacyTables();
    },
    ensureBatchKey: () => core.tokens.batch.ensureKey(),
    isBatchToken,
    checkBatchOperationToken: async (token, path) => {
      const entry = await core.tokens.lookup(token, '');
      if (entry === undefined || entry.type !== 'batch' || entry.namespace_path !== '') throw new PermissionDenied('invalid DR operation token');
      // Fresh from storage: a DR secondary's policy cache does not follow what replication applies.
      const acl = await core.policies.freshAcl('', entry.policies);
      if (!acl.allows(path, 'update')) throw new PermissionDenied();
    },
  };
}
