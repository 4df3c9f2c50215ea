/**
 * The mount table: which secrets engine serves which path prefix, per namespace. One key per
 * mount: non-local mounts at `core/mounts/<uuid>` (replicated), `local: true` mounts at
 * `local/core/mounts/<uuid>` with their data under `local/logical/<uuid>/`, so the keyspace
 * classifies both entry and data into the local Merkle subtree. One key per mount (not one array)
 * is what lets a performance paths filter drop a mount by key: values are ciphertext bound to
 * their key, so a primary cannot serve a secondary a rewritten table (src/core/paths-filter.ts).
 * Tables of the older layout (one JSON array at `core/mounts`, `local/core/mounts`) are still read,
 * and moved to the per-mount keys by the first write of their class or by migrateLegacyTables().
 *
 *   await mounts.enable('', 'secret/', { type: 'kv', options: { version: '2' } });
 *   mounts.resolve('', 'secret/data/app') // -> { entry, rest: 'data/app' }
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { InvalidRequest } from '../core/errors.js';
import { SerialReload } from '../core/serial-reload.js';
import type { Op, Store } from '../storage/store.js';
import { clashing, encodeEntry, entryKey as keyOf, longestMount, migrationOps, mountPath, readTable, type TableLayout } from './keyed-table.js';

export const MOUNT_TABLE_PREFIX = 'core/mounts/';
export const LOCAL_MOUNT_TABLE_PREFIX = 'local/core/mounts/';
const LAYOUT: TableLayout = { prefix: MOUNT_TABLE_PREFIX, localPrefix: LOCAL_MOUNT_TABLE_PREFIX, legacy: 'core/mounts', legacyLocal: 'local/core/mounts' };
const RESERVED = ['sys/', 'auth/', 'cubbyhole/', 'identity/'];
/** `generic` is Vault's old name of KV v1 (vault/mount.go mountAliases): served by KV, shown as `generic`. */
export const ENGINE_TYPES = ['kv', 'generic', 'transit'] as const;

export interface MountEntry {
  readonly path: string;
  readonly namespace: string;
  readonly type: string;
  readonly description: string;
  readonly accessor: string;
  readonly uuid: string;
  readonly local: boolean;
  readonly seal_wrap: boolean;
  readonly options: Record<string, string>;
  readonly config: { default_lease_ttl: number; max_lease_ttl: number };
}

export interface EnableInput {
  readonly type: string;
  readonly description?: string;
  readonly local?: boolean;
  readonly options?: Record<string, string>;
  readonly config?: { default_lease_ttl?: number; max_lease_ttl?: number };
}

export function storagePrefix(e: MountEntry): string {
  return `${e.local ? 'local/' : ''}logical/${e.uuid}/`;
}

/** `kv` with options.version "2" (or type `kv-v2`) is KV v2; anything else kv is v1. */
export function kvVersion(e: MountEntry): 1 | 2 {
  return e.options.version === '2' ? 2 : 1;
}

/** The stored mount table of one class (keyed-table.ts), with whether a legacy array is still there. */
export function readMountTable(store: Store, local: boolean): Promise<{ entries: MountEntry[]; legacy: boolean }> {
  return readTable<MountEntry>(store, LAYOUT, local);
}

function entryKey(e: MountEntry): string {
  return keyOf(LAYOUT, e);
}

export class Mounts {
  private entries: MountEntry[] = [];
  /** Per class, whether a legacy array table is still stored (the next write of that class moves it). */
  private legacy = { replicated: false, local: false };

  /**
   * `isNamespace(path)`: whether a namespace exists at `path`. A mount whose first segment names a
   * child namespace could never be reached (the namespace prefix resolves first): refused.
   */
  constructor(
    private readonly store: () => Store,
    private readonly isNamespace: (path: string) => boolean = () => false,
  ) {}

  /** Loads serialized, and read again when a local change landed meanwhile (core/serial-reload.ts). */
  private readonly reload = new SerialReload(
    async () => ({ replicated: await readMountTable(this.store(), false), local: await readMountTable(this.store(), true) }),
    ({ replicated, local }) => {
      this.entries = [...replicated.entries, ...local.entries];
      this.legacy = { replicated: replicated.legacy, local: local.legacy };
    },
  );

  /** Reads the table from storage (see SerialReload for why loads are serialized). */
  load(): Promise<void> {
    return this.reload.load();
  }

  /** Every mount of every namespace (a copy). */
  all(): MountEntry[] {
    return [...this.entries];
  }

  /**
   * Moves legacy array tables to per-mount keys, one atomic commit per class. A writable node (a
   * primary, before it serves filtered performance secondaries) calls this; secondaries never write.
   */
  async migrateLegacyTables(): Promise<void> {
    for (const local of [false, true]) {
      if (this.legacy[local ? 'local' : 'replicated']) await this.save((all) => all, local, []);
    }
  }

  list(namespace: string): MountEntry[] {
    return this.entries.filter((e) => e.namespace === namespace).sort((a, b) => a.path.localeCompare(b.path));
  }

  get(namespace: string, path: string): MountEntry | undefined {
    const p = normalise(path);
    return this.entries.find((e) => e.namespace === namespace && e.path === p);
  }

  /** Longest mount whose path prefixes `path` in `namespace`. */
  resolve(namespace: string, path: string): { entry: MountEntry; rest: string } | undefined {
    return longestMount(this.entries, namespace, path);
  }

  async enable(namespace: string, path: string, input: EnableInput): Promise<MountEntry> {
    const p = normalise(path);
    let type = input.type;
    const options: Record<string, string> = { ...(input.options ?? {}) };
    if (type === 'kv-v2') {
      type = 'kv';
      options.version = '2';
    }
    if (!(ENGINE_TYPES as readonly string[]).includes(type)) {
      throw new InvalidRequest(`plugin not found in the catalog: ${type.slice(0, 64)}`);
    }
    if (type === 'generic' && options.version !== undefined && options.version !== '') {
      throw new InvalidRequest('secrets engine "generic" does not allow setting a version');
    }
    if (options.version !== undefined && options.version !== '1' && options.version !== '2') {
      throw new InvalidRequest('options.version must be "1" or "2"');
    }
    if (RESERVED.some((r) => p.startsWith(r))) throw new InvalidRequest(`cannot mount at reserved path "${p}"`);
    const child = `${namespace}${p.split('/')[0]}/`;
    if (this.isNamespace(child)) throw new InvalidRequest(`cannot mount at "${path}": namespace "${child}" takes that path`);
    const clash = clashing(this.entries, namespace, p);
    if (clash) throw new InvalidRequest(`path is already in use at ${clash.path}`);
    const entry: MountEntry = {
      path: p,
      namespace,
      type,
      description: input.description ?? '',
      accessor: `${type}_${randomBytes(4).toString('hex')}`,
      uuid: randomUUID(),
      local: input.local === true,
      seal_wrap: false,
      options,
      config: { default_lease_ttl: input.config?.default_lease_ttl ?? 0, max_lease_ttl: input.config?.max_lease_ttl ?? 0 },
    };
    await this.save((all) => (all.some((e) => e.uuid === entry.uuid) ? all : [...all, entry]), entry.local, [{ type: 'put', key: entryKey(entry), value: encodeEntry(entry) }]);
    return entry;
  }

  /** Removes the mount, then its data in chunks (the mount is unreachable from the first commit). */
  async disable(namespace: string, path: string): Promise<void> {
    const entry = this.get(namespace, path);
    if (!entry) return;
    await this.save((all) => all.filter((e) => e.uuid !== entry.uuid), entry.local, [{ type: 'del', key: entryKey(entry) }]);
    const prefix = storagePrefix(entry);
    let batch: Op[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const child of await this.store().list(dir)) {
        if (child.endsWith('/')) await walk(dir + child);
        else batch.push({ type: 'del', key: dir + child });
        if (batch.length >= 500) {
          await this.store().commit(batch);
          batch = [];
        }
      }
    };
    await walk(prefix);
    if (batch.length > 0) await this.store().commit(batch);
  }

  async tune(namespace: string, path: string, input: { description?: string; default_lease_ttl?: number; max_lease_ttl?: number; options?: Record<string, string> }): Promise<MountEntry> {
    const entry = this.get(namespace, path);
    if (!entry) throw new InvalidRequest(`no mount at "${normalise(path)}"`);
    if (input.options?.version !== undefined && input.options.version !== (entry.options.version ?? '1')) {
      throw new InvalidRequest('changing a KV mount version in place is not supported; enable a new mount');
    }
    const next: MountEntry = {
      ...entry,
      description: input.description ?? entry.description,
      config: {
        default_lease_ttl: input.default_lease_ttl ?? entry.config.default_lease_ttl,
        max_lease_ttl: input.max_lease_ttl ?? entry.config.max_lease_ttl,
      },
    };
    await this.save((all) => all.map((e) => (e.uuid === entry.uuid ? next : e)), entry.local, [{ type: 'put', key: entryKey(next), value: encodeEntry(next) }]);
    return next;
  }

  /**
   * Commits `ops` (the changed entry's key), then swaps the cache (after durability). While the
   * class still has a legacy array, the same commit writes every entry of `next` of that class to
   * its own key and deletes the array, so no state mixes the two layouts.
   */
  private async save(change: (entries: MountEntry[]) => MountEntry[], local: boolean, ops: Op[]): Promise<void> {
    const cls = local ? 'local' : 'replicated';
    const all: Op[] = [...ops, ...migrationOps(LAYOUT, change(this.entries), local, this.legacy[cls], new Set(ops.map((o) => o.key)))];
    if (all.length > 0) await this.store().commit(all);
    this.reload.changed();
    this.legacy = { ...this.legacy, [cls]: false };
    // Applied to the table as it is now, not as it was before the commit: a reload (replicated
    // data landing on a performance secondary) may have installed a newer table meanwhile.
    this.entries = change(this.entries);
  }
}

function normalise(path: string): string {
  return mountPath(path, 'mount path');
}
