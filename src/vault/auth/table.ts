/**
 * The auth mount table: which auth method serves which `auth/<path>` prefix, per namespace. As the
 * secret-engine table (mounts.ts), one key per mount: non-local entries at `core/auth/<uuid>`
 * (replicated class, so they reach performance secondaries, and a paths filter can drop one by
 * key), `local: true` ones at `local/core/auth/<uuid>`; a method's data lives under `auth/<uuid>/`
 * or `local/auth/<uuid>/` so the keyspace classifies it with its entry. Tables of the older layout
 * (one JSON array at `core/auth`, `local/core/auth`) are still read, and moved to per-mount keys by
 * the first write of their class or by migrateLegacyTables().
 *
 * The table is read from the store on every use (two gets, served by the read cache) rather than
 * cached: replication may rewrite it under us, and there is then no cache to go stale.
 *
 *   await table.enable('', 'userpass/', { type: 'userpass' });
 *   await table.resolve('', 'userpass/login/bob') // -> { entry, rest: 'login/bob' }
 */
import { hash, randomBytes, randomUUID } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import { KeyedMutex } from '../../core/keyed-mutex.js';
import type { Op, Store } from '../../storage/store.js';
import { clashing, encodeEntry as encode, entryKey as keyOf, longestMount, migrationOps as moveOps, mountPath, readTable, type TableLayout } from '../keyed-table.js';
import type { EnableInput, MountEntry } from '../mounts.js';

export const AUTH_TABLE_PREFIX = 'core/auth/';
export const LOCAL_AUTH_TABLE_PREFIX = 'local/core/auth/';
const LAYOUT: TableLayout = { prefix: AUTH_TABLE_PREFIX, localPrefix: LOCAL_AUTH_TABLE_PREFIX, legacy: 'core/auth', legacyLocal: 'local/core/auth' };
export const AUTH_TYPES = ['userpass', 'approle'] as const;
export type AuthType = (typeof AUTH_TYPES)[number];

/**
 * An auth method's entry: a mount entry (the same fields, layout and table rules as secrets
 * engines) whose `path` is relative to `auth/` (`userpass/`, `team/approle/`) and whose type is
 * one of AUTH_TYPES. Its `config` bounds the tokens the method issues.
 */
export interface AuthEntry extends Omit<MountEntry, 'type'> {
  readonly type: AuthType;
}

/** What `sys/auth/:path` enables: the same input as a secrets engine's. */
export type AuthEnableInput = EnableInput;

/** Where a method's own data (users, roles, secret IDs) lives. */
export function dataPrefix(e: AuthEntry): string {
  return `${e.local ? 'local/' : ''}auth/${e.uuid}/`;
}

/** The built-in token method's accessor in `namespace`: stable, since it has no stored entry. */
export function tokenAccessor(namespace: string): string {
  return `auth_token_${hash('sha256', `token:${namespace}`, 'hex').slice(0, 8)}`;
}

function entryKey(e: AuthEntry): string {
  return keyOf(LAYOUT, e);
}

/** The stored auth table of one class (keyed-table.ts), with whether a legacy array is still there. */
export function readAuthTable(store: Store, local: boolean): Promise<{ entries: AuthEntry[]; legacy: boolean }> {
  return readTable<AuthEntry>(store, LAYOUT, local);
}

/** The ops that move one class's legacy array (if any) to per-mount keys; [] when there is none. */
function migrationOps(table: { entries: AuthEntry[]; legacy: boolean }, local: boolean, skip: ReadonlySet<string>): Op[] {
  return moveOps(LAYOUT, table.entries, local, table.legacy, skip);
}

export class AuthTable {
  readonly #locks = new KeyedMutex();

  constructor(private readonly store: () => Store) {}

  async #all(): Promise<AuthEntry[]> {
    return [...(await readAuthTable(this.store(), false)).entries, ...(await readAuthTable(this.store(), true)).entries];
  }

  /**
   * Moves legacy array tables to per-mount keys, one atomic commit per class. A writable node (a
   * primary, before it serves filtered performance secondaries) calls this; secondaries never write.
   */
  async migrateLegacyTables(): Promise<void> {
    await this.#locks.run('table', async () => {
      for (const local of [false, true]) {
        const ops = migrationOps(await readAuthTable(this.store(), local), local, new Set());
        if (ops.length > 0) await this.store().commit(ops);
      }
    });
  }

  async list(namespace: string): Promise<AuthEntry[]> {
    return (await this.#all()).filter((e) => e.namespace === namespace).sort((a, b) => a.path.localeCompare(b.path));
  }

  async get(namespace: string, path: string): Promise<AuthEntry | undefined> {
    const p = normalise(path);
    return (await this.#all()).find((e) => e.namespace === namespace && e.path === p);
  }

  /** The mount whose path prefixes `path` (relative to `auth/`) in `namespace`, and the rest. */
  async resolve(namespace: string, path: string): Promise<{ entry: AuthEntry; rest: string } | undefined> {
    return longestMount(await this.#all(), namespace, path);
  }

  async enable(namespace: string, path: string, input: AuthEnableInput): Promise<AuthEntry> {
    const p = normalise(path);
    const type = input.type;
    if (!(AUTH_TYPES as readonly string[]).includes(type)) throw new InvalidRequest(`unknown auth method type: ${type.slice(0, 64)}`);
    if (p === 'token/' || p.startsWith('token/')) throw new InvalidRequest('token credential backend cannot be instantiated');
    if (!/^[\w.-]+(\/[\w.-]+)*\/$/.test(p)) throw new InvalidRequest(`invalid auth mount path "${p.slice(0, 128)}"`);
    const ttl = { default_lease_ttl: input.config?.default_lease_ttl ?? 0, max_lease_ttl: input.config?.max_lease_ttl ?? 0 };
    if (ttl.max_lease_ttl > 0 && ttl.default_lease_ttl > ttl.max_lease_ttl) throw new InvalidRequest('default lease TTL cannot be greater than max lease TTL');
    return this.#locks.run('table', async () => {
      const all = await this.#all();
      const clash = clashing(all, namespace, p);
      if (clash) throw new InvalidRequest(`path is already in use at auth/${clash.path}`);
      const entry: AuthEntry = {
        path: p,
        namespace,
        type: type as AuthType,
        description: input.description ?? '',
        accessor: `auth_${type}_${randomBytes(4).toString('hex')}`,
        uuid: randomUUID(),
        local: input.local === true,
        seal_wrap: false,
        options: { ...(input.options ?? {}) },
        config: ttl,
      };
      await this.#save(entry.local, [{ type: 'put', key: entryKey(entry), value: encode(entry) }]);
      return entry;
    });
  }

  /** Vault's tune of an auth mount: description and lease TTLs (0 = the system's). */
  async tune(namespace: string, path: string, input: { description?: string; default_lease_ttl?: number; max_lease_ttl?: number }): Promise<AuthEntry> {
    return this.#locks.run('table', async () => {
      const p = normalise(path);
      const entry = (await this.#all()).find((e) => e.namespace === namespace && e.path === p);
      if (!entry) throw new InvalidRequest(`tune of path "auth/${p.slice(0, 128)}" failed: no mount entry found`);
      const config = {
        default_lease_ttl: input.default_lease_ttl ?? entry.config.default_lease_ttl,
        max_lease_ttl: input.max_lease_ttl ?? entry.config.max_lease_ttl,
      };
      if (config.max_lease_ttl > 0 && config.default_lease_ttl > config.max_lease_ttl) throw new InvalidRequest('default lease TTL cannot be greater than max lease TTL');
      const next: AuthEntry = { ...entry, description: input.description ?? entry.description, config };
      await this.#save(next.local, [{ type: 'put', key: entryKey(next), value: encode(next) }]);
      return next;
    });
  }

  /** Removes the entry only; the caller then removes its data and tokens (see AuthMethods). */
  async remove(namespace: string, path: string): Promise<AuthEntry | undefined> {
    return this.#locks.run('table', async () => {
      const all = await this.#all();
      const p = normalise(path);
      const entry = all.find((e) => e.namespace === namespace && e.path === p);
      if (entry) await this.#save(entry.local, [{ type: 'del', key: entryKey(entry) }]);
      return entry;
    });
  }

  /**
   * Commits `ops` (the changed entry's key). While the class still has a legacy array, the same
   * commit moves its other entries to their own keys and deletes the array, so no state mixes the
   * two layouts (an entry removed by `ops` is not rewritten).
   */
  async #save(local: boolean, ops: Op[]): Promise<void> {
    const migrate = migrationOps(await readAuthTable(this.store(), local), local, new Set(ops.map((o) => o.key)));
    await this.store().commit([...ops, ...migrate]);
  }
}

function normalise(path: string): string {
  return mountPath(path, 'auth mount path');
}
