/**
 * Cubbyhole: each service token's private storage, mounted at `cubbyhole/` in every namespace (as
 * Vault's builtin/logical/cubbyhole). A token's whole cubbyhole is one value at
 * `local/cubbyhole/<token hash>`: in the token's own storage class (local: never sent to a
 * performance secondary, held by a DR secondary as the token is), and deleted by the same commit
 * that deletes the token entry (token-keys.ts `entryDeletion`, which every revocation and the
 * expiry tidy go through). Inside it, entries by namespace, then by path.
 *
 *   await cubby.write(hash, '', 'app/x', { v: 1 }, () => tokens.lookup(token).then(Boolean));
 *   await cubby.read(hash, '', 'app/x');   // { v: 1 }
 *   await cubby.list(hash, '', 'app/');    // ['x']
 */
import { KeyedMutex } from '../core/keyed-mutex.js';
import type { Store } from '../storage/store.js';

export const CUBBYHOLE_PREFIX = 'local/cubbyhole/';

/** Where the cubbyhole of the token with this hash lives. */
export function cubbyholeKey(tokenHash: string): string {
  return CUBBYHOLE_PREFIX + tokenHash;
}

type Entries = Record<string, Record<string, Record<string, unknown>>>;

export class Cubbyhole {
  readonly #locks = new KeyedMutex();

  constructor(private readonly store: () => Store) {}

  async #entries(hash: string): Promise<Entries> {
    const raw = await this.store().get(cubbyholeKey(hash));
    if (raw === undefined) return {};
    try {
      const parsed: unknown = JSON.parse(raw.toString('utf8'));
      return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Entries) : {};
    } catch {
      return {};
    }
  }

  async read(hash: string, namespace: string, path: string): Promise<Record<string, unknown> | undefined> {
    return (await this.#entries(hash))[namespace]?.[path];
  }

  /** The keys directly under `prefix` ('' or ending in '/'), a sub-path as `dir/`, sorted. */
  async list(hash: string, namespace: string, prefix: string): Promise<string[]> {
    const out = new Set<string>();
    for (const p of Object.keys((await this.#entries(hash))[namespace] ?? {})) {
      if (!p.startsWith(prefix)) continue;
      const rest = p.slice(prefix.length);
      const slash = rest.indexOf('/');
      out.add(slash === -1 ? rest : rest.slice(0, slash + 1));
    }
    return [...out].sort();
  }

  /**
   * Writes (or with `data` undefined, deletes) one entry. `alive` is asked after the commit: a
   * revocation that committed meanwhile could not see this write, so it is undone here.
   */
  async write(hash: string, namespace: string, path: string, data: Record<string, unknown> | undefined, alive: () => Promise<boolean>): Promise<void> {
    await this.#locks.run(hash, async () => {
      const all = await this.#entries(hash);
      const ns = { ...(all[namespace] ?? {}) };
      if (data === undefined) {
        if (!(path in ns)) return;
        delete ns[path];
      } else {
        ns[path] = data;
      }
      const next: Entries = { ...all, [namespace]: ns };
      if (Object.keys(ns).length === 0) delete next[namespace];
      const key = cubbyholeKey(hash);
      await this.store().commit([Object.keys(next).length === 0 ? { type: 'del', key } : { type: 'put', key, value: Buffer.from(JSON.stringify(next), 'utf8') }]);
      if (data !== undefined && !(await alive())) await this.store().commit([{ type: 'del', key }]);
    });
  }
}
