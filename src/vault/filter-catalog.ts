/**
 * The mount (secret engines and auth methods) and namespace catalog, read from storage, in the plain shape the pure paths
 * filter takes (src/core/paths-filter.ts); replication's paths filters read it through the catalog
 * the node hands them. Read through the Store (decrypted), so it reflects every
 * durable commit: build it after reading a WAL batch (so no mount of the batch is unknown to it)
 * and right after pinning a Merkle snapshot (a mount removed since is then judged unknown, which the
 * predicate handles). Rebuild it when a batch touches a mount table (touchesCatalog).
 *
 *   const catalog = await loadFilterCatalog(core.store());
 *   const kf = keyFilter(await filters.get(secondaryId), catalog.mounts);
 */
import type { Catalog, CatalogMount } from '../core/paths-filter.js';
import type { Store } from '../storage/store.js';
import { readAuthTable } from './auth/table.js';
import { readMountTable } from './mounts.js';
import { readNamespaceEntries } from './namespaces.js';

export async function loadFilterCatalog(store: Store): Promise<Catalog> {
  const replicated = await readMountTable(store, false);
  const local = await readMountTable(store, true);
  const mounts: CatalogMount[] = [...replicated.entries, ...local.entries].map((e) => ({ namespace: e.namespace, path: e.path, uuid: e.uuid, local: e.local }));
  // Auth methods are named `auth/<path>` in a filter, as in Vault (their keys: core/auth/<uuid>, auth/<uuid>/).
  for (const local of [false, true]) {
    for (const e of (await readAuthTable(store, local)).entries) mounts.push({ namespace: e.namespace, path: `auth/${e.path}`, uuid: e.uuid, local: e.local });
  }
  const namespaces = (await readNamespaceEntries(store)).map((n) => n.path).sort();
  return { mounts, namespaces };
}
