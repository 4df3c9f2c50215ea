/**
 * Namespaces: nested tenants addressed by `X-Vault-Namespace` or by a path prefix. Each holds its
 * own mounts, policies and tokens; the root namespace is ''. Paths are kept as `a/b/`.
 *
 *   await ns.create('', 'team/');            // POST sys/namespaces/team
 *   ns.resolve('team/', 'app/secret/data/x') // -> { namespace: 'team/app/', path: 'secret/data/x' } if team/app/ exists
 *
 * All namespaces stay in memory (they are few); the store is the source of truth and `load()`
 * refreshes the cache (called at unseal and when replication changes the keyspace).
 */
import { randomBytes } from 'node:crypto';
import { InvalidRequest, NotFound } from '../core/errors.js';
import { SerialReload } from '../core/serial-reload.js';
import type { Store } from '../storage/store.js';

const PREFIX = 'core/namespaces/';

/**
 * Names no namespace may have, Vault's list (OpenBao's helper/namespace reservedNames): paths
 * every namespace routes itself, and relative segments. Refused with Vault's 400 text.
 */
const RESERVED_NAMES: ReadonlySet<string> = new Set(['.', '..', 'root', 'sys', 'audit', 'auth', 'cubbyhole', 'identity']);

export interface NamespaceEntry {
  readonly id: string;
  /** Full path with trailing slash, e.g. `a/b/`. */
  readonly path: string;
  readonly custom_metadata: Record<string, string>;
}

/** Every stored namespace record (one key per namespace under `core/namespaces/`). */
export async function readNamespaceEntries(store: Store): Promise<NamespaceEntry[]> {
  const out: NamespaceEntry[] = [];
  const walk = async (prefix: string): Promise<void> => {
    for (const child of await store.list(prefix)) {
      if (child.endsWith('/')) await walk(prefix + child);
      else {
        const raw = await store.get(prefix + child);
        if (raw) out.push(JSON.parse(raw.toString('utf8')) as NamespaceEntry);
      }
    }
  };
  await walk(PREFIX);
  return out;
}

export class Namespaces {
  private byPath = new Map<string, NamespaceEntry>();

  /**
   * `mountHidden(parent, name)`: the path of a mount of `parent` that a child namespace `name`
   * (as `name/`) would hide, if any. Paths resolve their namespace prefix before any mount, so such
   * a namespace would make the mount's data unreachable: creating it is refused.
   */
  constructor(
    private readonly store: () => Store,
    private readonly mountHidden: (parent: string, name: string) => string | undefined = () => undefined,
  ) {}

  /** Loads serialized, and read again when a local change landed meanwhile (core/serial-reload.ts). */
  private readonly reload = new SerialReload(
    () => readNamespaceEntries(this.store()),
    (entries) => {
      this.byPath = new Map(entries.map((e) => [e.path, e]));
    },
  );

  /** Reads every namespace from storage (see SerialReload for why loads are serialized). */
  load(): Promise<void> {
    return this.reload.load();
  }

  exists(path: string): boolean {
    return path === '' || this.byPath.has(path);
  }

  /** Throws unless `path` ('' or `a/b/`) is an existing namespace. */
  require(path: string): void {
    if (!this.exists(path)) throw new InvalidRequest(`namespace "${path}" does not exist`);
  }

  /** Splits a request path into its namespace (header + longest existing prefix) and the rest. */
  resolve(headerNs: string, path: string): { namespace: string; path: string } {
    this.require(headerNs);
    // A cluster without namespaces: no split, no candidate strings.
    if (this.byPath.size === 0) return { namespace: headerNs, path };
    const segs = path.split('/');
    let best = { namespace: headerNs, path };
    for (let i = 1; i < segs.length; i++) {
      const candidate = headerNs + segs.slice(0, i).join('/') + '/';
      if (!this.byPath.has(candidate)) break;
      best = { namespace: candidate, path: segs.slice(i).join('/') };
    }
    return best;
  }

  read(parent: string, rel: string): NamespaceEntry {
    const e = this.byPath.get(join(parent, rel));
    if (!e) throw new NotFound();
    return e;
  }

  /** Direct children of `parent`, as `name/`. */
  children(parent: string): NamespaceEntry[] {
    return [...this.byPath.values()]
      .filter((e) => e.path.startsWith(parent) && e.path !== parent && !e.path.slice(parent.length, -1).includes('/'))
      .sort((a, b) => a.path.localeCompare(b.path));
  }

  async create(parent: string, rel: string, customMetadata: Record<string, string> = {}): Promise<NamespaceEntry> {
    this.require(parent);
    const path = join(parent, rel);
    const segs = path.slice(0, -1).split('/');
    for (const seg of segs) {
      if (RESERVED_NAMES.has(seg)) throw new InvalidRequest(`"${seg}/" is a reserved path and cannot be used as a namespace name`);
      if (!/^[A-Za-z0-9_.-]+$/.test(seg)) throw new InvalidRequest(`invalid namespace name "${seg}"`);
    }
    const up = segs.length > 1 ? segs.slice(0, -1).join('/') + '/' : '';
    if (!this.exists(up)) throw new InvalidRequest(`parent namespace "${up}" does not exist`);
    const hidden = this.mountHidden(up, path.slice(up.length));
    if (hidden !== undefined) throw new InvalidRequest(`cannot create namespace "${path}": it would hide the mount "${up}${hidden}"`);
    const existing = this.byPath.get(path);
    if (existing) return existing;
    const entry: NamespaceEntry = { id: randomBytes(3).toString('base64url').slice(0, 5), path, custom_metadata: customMetadata };
    await this.store().commit([{ type: 'put', key: PREFIX + path.slice(0, -1), value: Buffer.from(JSON.stringify(entry)) }]);
    this.reload.changed();
    this.byPath.set(path, entry);
    return entry;
  }

  /** Refuses while the namespace has child namespaces; the caller removes its mounts first. */
  async delete(parent: string, rel: string): Promise<void> {
    const path = join(parent, rel);
    if (!this.byPath.has(path)) return;
    if (this.children(path).length > 0) throw new InvalidRequest(`namespace "${path}" has child namespaces; delete them first`);
    await this.store().commit([{ type: 'del', key: PREFIX + path.slice(0, -1) }]);
    this.reload.changed();
    this.byPath.delete(path);
  }
}

function join(parent: string, rel: string): string {
  const trimmed = rel.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') throw new InvalidRequest('namespace path is required');
  return `${parent}${trimmed}/`;
}
