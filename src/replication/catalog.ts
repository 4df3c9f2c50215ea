/**
 * What replication needs of the vault core, declared here so that replication imports nothing
 * of the vault: the node adapts its core to it (src/node/vault-catalog.ts). The drivers use the
 * `CoreHooks` part (store, reopen, reload, wrap, revoke, restore); the unit around them adds the
 * seal state, the catalog the paths filters judge, what a new performance primary prepares, and
 * the check of a batch token presented as a DR operation token.
 *
 *   const unit = new ReplicationUnit({ ..., vault: vaultCatalog(core) });
 */
import type { Catalog } from '../core/paths-filter.js';
import type { CoreHooks } from './driver.js';

export interface VaultCatalog extends CoreHooks {
  /** Whether the core is sealed (or still loading its caches after an unseal). */
  sealed(): boolean;
  /** Mounts, auth mounts and namespaces as stored now (the paths filters judge them). */
  filterCatalog(): Promise<Catalog>;
  /** Both layouts of mount tables become one key per mount (a paths filter drops mounts by key). */
  migrateLegacyTables(): Promise<void>;
  /** Makes the batch token key if there is none: a performance secondary mints with its primary's. */
  ensureBatchKey(): Promise<void>;
  /** Whether `token` has the form of a batch token (nothing is looked up). */
  isBatchToken(token: string): boolean;
  /**
   * Throws PermissionDenied unless `token` is a root-namespace batch token of this cluster's
   * primary whose policies grant `update` on `path`.
   */
  checkBatchOperationToken(token: string, path: string): Promise<void>;
}
