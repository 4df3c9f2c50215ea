/**
 * The vault core: the services behind the HTTP routes, and the `CoreServices` the dispatcher needs
 * (namespace resolution, authentication, mounted engines, wrapping). It owns the seal lifecycle:
 * on unseal it opens the barrier and loads the namespace, mount and policy caches; on seal it
 * drops them. Observers of the seal (replication, generate-root) follow it through the
 * `SealLifecycle` given at construction (lifecycle.ts); the core knows nothing of replication.
 *
 *   const core = new VaultCore({ storage, seal, license, hosted: false });
 *   await core.start();
 *   const { keys, root_token } = await core.initialize({ secret_shares: 1, secret_threshold: 1 });
 */
import { InvalidRequest, LicenseRequired, PermissionDenied, ReplicatedWriteRefused, Sealed, StandbyWriteRefused } from '../core/errors.js';
import type { Store } from '../storage/store.js';
import { getDecoded, ScopedStore } from '../storage/store.js';
import type { SealManager, SealStatus, Cipher } from '../seal/index.js';
import type { Caller } from './caller.js';
import { createKvEngine } from './kv/index.js';
import type { LogicalResponse, Operation, PathHelp, SecretsEngine } from './logical.js';
import { Mounts, kvVersion, storagePrefix, type MountEntry } from './mounts.js';
import { createTransitEngine, type TransitEngine } from './transit/index.js';
import { Namespaces } from './namespaces.js';
import { Policies } from './policies.js';
import { AuthMethods } from './auth/index.js';
import { DEFAULT_TTL_LIMITS, TokenStore, type TtlLimits } from './tokens.js';
import { Wrapping } from './wrapping.js';
import { SealLifecycle, type OpenedContext } from './lifecycle.js';
import { KeyService, type KeyStore } from './keys.js';
import { Rekey } from '../seal/rekey.js';
import { AuditDevices } from './audit/devices.js';
import type { AuditTrail } from './audit/trail.js';

/** Replicated, as Vault's `core/unseal-keys-backup`: the PGP-encrypted shares of the last rekey with `backup`. */
export const REKEY_BACKUP_KEY = 'core/unseal-keys-backup';

/** What the core needs from the storage engine. */
/**
 * Whether the core's in-memory state (namespaces, mount and auth tables, policies, audit devices,
 * the keyring) derives from this storage key: they all live under `core/` and `local/core/`.
 */
export function cachesDeriveFrom(key: string): boolean {
  return key.startsWith('core/') || key.startsWith('local/core/');
}

export interface CoreStorage {
  secure(cipher: Cipher): Store;
}

export interface LicenseView {
  has(feature: string): boolean;
  /** Why the feature is missing, for the error message. */
  why(feature: string): string;
}

export interface CoreOptions {
  readonly storage: CoreStorage;
  readonly seal: SealManager;
  readonly license: LicenseView;
  readonly hosted: boolean;
  readonly now?: () => number;
  /** System bounds on token TTLs (config `max_lease_ttl`, `default_lease_ttl`). */
  readonly ttlLimits?: TtlLimits;
  /** Told after every unseal and before every seal; a core of its own when not given. */
  readonly lifecycle?: SealLifecycle;
  /** Where this node's file audit devices may write (config `audit_dir`); none: stdout and discard only. */
  readonly auditDir?: string;
  /** Told when an audit device cannot be opened or written here (never a secret). */
  readonly auditWarn?: (fields: Record<string, unknown>, message: string) => void;
}

export class VaultCore {
  readonly seal: SealManager;
  readonly namespaces: Namespaces;
  readonly mounts: Mounts;
  readonly policies: Policies;
  readonly tokens: TokenStore;
  /** The system lease bounds (config `default_lease_ttl`, `max_lease_ttl`): what an untuned mount shows. */
  readonly ttlLimits: TtlLimits;
  readonly wrapping: Wrapping;
  /** Auth methods mounted under `auth/` (userpass, approle); the token method is `tokens`. */
  readonly auth: AuthMethods;
  /** sys/rotate, sys/key-status, sys/rotate/config. */
  readonly keys: KeyService;
  /** sys/rekey/*: progress in memory, cancelled by a seal. */
  readonly rekey: Rekey;
  /** sys/audit: the enabled audit devices and this node's open files. */
  readonly audit: AuditDevices;
  /** What the dispatcher audits every request through. */
  readonly auditTrail: AuditTrail;
  private secure: Store | undefined;
  private isInitialized = false;
  private readonly engines: { readonly kv: Record<1 | 2, SecretsEngine>; readonly transit: TransitEngine };
  private readonly lifecycle: SealLifecycle;

  constructor(private readonly opts: CoreOptions) {
    this.seal = opts.seal;
    this.lifecycle = opts.lifecycle ?? new SealLifecycle();
    const store = () => this.store();
    // Each refuses a path the other takes (see their constructors).
    this.namespaces = new Namespaces(store, (parent, name) => this.mounts.list(parent).find((m) => m.path.startsWith(name))?.path);
    this.mounts = new Mounts(store, (path) => this.namespaces.exists(path));
    this.policies = new Policies(store);
    this.audit = new AuditDevices(store, { auditDir: opts.auditDir, ...(opts.auditWarn ? { warn: opts.auditWarn } : {}) });
    this.auditTrail = {
      enabled: () => this.audit.enabled(),
      logRequest: (i, error) => this.audit.logRequest(i, error),
      logResponse: (i, o) => this.audit.logResponse(i, o),
      mountOf: (namespace, path) => {
        const hit = this.mounts.resolve(namespace, path);
        return hit ? { type: hit.entry.type, point: hit.entry.path, accessor: hit.entry.accessor } : undefined;
      },
    };
    const lazy: Store = {
      get: (k) => this.store().get(k),
      list: (p) => this.store().list(p),
      commit: (ops) => this.store().commit(ops),
      getDecoded: (k, decode) => getDecoded(this.store(), k, decode),
    };
    const now = opts.now ?? Date.now;
    this.ttlLimits = opts.ttlLimits ?? DEFAULT_TTL_LIMITS;
    this.tokens = new TokenStore(lazy, { now, ...(opts.ttlLimits ? { limits: opts.ttlLimits } : {}) });
    this.wrapping = new Wrapping(this.tokens, lazy);
    this.auth = new AuthMethods(store, this.tokens, { now, limits: opts.ttlLimits ?? DEFAULT_TTL_LIMITS });
    this.keys = new KeyService(this.seal, () => this.store() as KeyStore, now);
    this.rekey = new Rekey({
      seal: this.seal,
      commit: this.keys.commit,
      installed: () => this.keys.installed(),
      storeBackup: async (backup) => {
        await this.store().commit([backup === undefined ? { type: 'del', key: REKEY_BACKUP_KEY } : { type: 'put', key: REKEY_BACKUP_KEY, value: Buffer.from(JSON.stringify(backup)) }]);
      },
    });
    const kvNow = () => new Date(now());
    this.engines = { kv: { 1: createKvEngine({ version: 1, now: kvNow }), 2: createKvEngine({ version: 2, now: kvNow }) }, transit: createTransitEngine({ now: kvNow }) };
  }

  /** Reads the seal state; call once before serving. */
  async start(): Promise<void> {
    this.isInitialized = (await this.seal.status()).initialized;
  }

  store(): Store {
    if (!this.secure) throw new Sealed();
    return this.secure;
  }

  /** Once true, stays true; until then read again each time (another node of an HA cluster may initialise the shared storage). */
  async initialized(): Promise<boolean> {
    if (!this.isInitialized) this.isInitialized = (await this.seal.status()).initialized;
    return this.isInitialized;
  }

  /**
   * Sealed until the barrier is open and mounts, namespaces and policies are loaded (as Vault
   * counts itself sealed until its post-unseal setup ran): a request in between is a 503, never
   * a 404 for a mount that exists but is not loaded yet.
   */
  sealed(): boolean {
    return this.secure === undefined || !this.loaded;
  }
  private loaded = false;

  /** sys/init: shares of a new root key and a root token; the node stays sealed, as Vault. */
  async initialize(req: { secret_shares: number; secret_threshold: number; rootTokenId?: string }): Promise<{ keys: string[]; keys_base64: string[]; root_token: string }> {
    const result = await this.seal.init({ secret_shares: req.secret_shares, secret_threshold: req.secret_threshold });
    this.isInitialized = true;
    await this.seal.unsealWithRootKey(result.rootKey);
    await this.opened({ initializing: true });
    const root = await this.tokens.createRoot(req.rootTokenId !== undefined ? { id: req.rootTokenId } : {});
    await this.keys.publish();
    await this.sealNow();
    return { keys: result.keys, keys_base64: result.keysBase64, root_token: root.token };
  }

  async unseal(key: string | undefined, reset: boolean): Promise<SealStatus> {
    if (reset) return this.seal.resetUnseal();
    if (key === undefined || key === '') throw new InvalidRequest('missing required parameter "key"');
    const status = await this.seal.unseal(key);
    if (!status.sealed && this.secure === undefined) await this.opened();
    return status;
  }

  async sealNow(): Promise<void> {
    if (this.secure !== undefined) await this.lifecycle.sealing();
    await this.seal.seal();
    await this.audit.close();
    this.secure = undefined;
    this.loaded = false;
  }

  /** Opens the barrier and loads the caches; called after every unseal. */
  private async opened(context: OpenedContext = { initializing: false }): Promise<void> {
    await this.reopen();
    this.loaded = true;
    await this.lifecycle.opened(context);
  }

  /** Rebinds the barrier to the live keyring (it changes at DR activation) and reloads caches. */
  async reopen(): Promise<void> {
    this.secure = this.opts.storage.secure(this.seal.cipher());
    await this.reload();
  }

  /**
   * Refreshes every cache from storage (unseal, after replication changes the keyspace, and on an
   * HA standby when what it follows wrote a key `cachesDeriveFrom` names).
   */
  async reload(): Promise<void> {
    // First: a standby's keyring takes the terms its active node rotated in before reading under them.
    await this.keys.refresh();
    await this.namespaces.load();
    await this.mounts.load();
    this.policies.load();
    // Each node opens its own file for every device of the table (unseal, reload, activation).
    await this.audit.load();
  }


  resolveNamespace(headerNs: string, path: string): { namespace: string; path: string } {
    return this.namespaces.resolve(headerNs, path);
  }

  /**
   * Builds the caller of `token` and lets `check` refuse it (ACL, sudo) before the token is used:
   * a refused request spends none of a token's `num_uses`. The use is spent only after `check`
   * passes, under the token's lock, so a last use is never spent twice.
   */
  async authenticate(token: string | undefined, namespace: string, check: (caller: Caller) => void = () => {}): Promise<Caller> {
    if (token === undefined || token === '') throw new PermissionDenied('permission denied: missing client token');
    const seen = await this.tokens.lookup(token);
    if (seen === undefined || !namespace.startsWith(seen.namespace_path)) throw new PermissionDenied();
    const acl = await this.policies.acl(seen.namespace_path, seen.policies);
    const caller = (entry: typeof seen): Caller => ({
      token,
      entry,
      accessor: entry.accessor,
      policies: entry.policies,
      namespace: entry.namespace_path,
      root: entry.policies.includes('root'),
      allows: (path, capability) => acl.allows(path, capability),
    });
    check(caller(seen));
    // An unlimited token has no use to spend: the entry already read is the one to act with (no
    // second read and decrypt on every request).
    if (seen.num_uses === 0) return caller(seen);
    const entry = await this.tokens.validateForUse(token);
    if (entry.namespace_path !== seen.namespace_path || entry.policies.join(',') !== seen.policies.join(',')) throw new PermissionDenied();
    return caller(entry);
  }

  requireLicense(feature: string, hostedOk: boolean): void {
    if (hostedOk && this.opts.hosted) return;
    if (!this.opts.license.has(feature)) throw new LicenseRequired(feature, this.opts.license.why(feature));
  }

  /**
   * Transit's auto-rotation over every transit mount (the node's periodic timer calls it on a
   * writable node). A mount this node may not write (a secondary's replicated one) is skipped; the
   * number of keys rotated.
   */
  async rotateTransitKeys(): Promise<number> {
    let rotated = 0;
    for (const entry of this.mounts.all()) {
      if (entry.type !== 'transit') continue;
      try {
        rotated += await this.engines.transit.autoRotate(new ScopedStore(this.store(), storagePrefix(entry)));
      } catch (e) {
        if (!(e instanceof ReplicatedWriteRefused) && !(e instanceof StandbyWriteRefused)) throw e;
      }
    }
    return rotated;
  }

  /** The engine serving a mount: transit, or KV of the mount's version (kv and generic). */
  private engineOf(entry: MountEntry): SecretsEngine {
    return entry.type === 'transit' ? this.engines.transit : this.engines.kv[kvVersion(entry)];
  }

  async logical(namespace: string, path: string, operation: Operation, data: Record<string, unknown>): Promise<{ response: LogicalResponse | null } | undefined> {
    const hit = this.mounts.resolve(namespace, path);
    if (!hit) return undefined;
    const engine = this.engineOf(hit.entry);
    const scoped = new ScopedStore(this.store(), storagePrefix(hit.entry));
    return { response: await engine.handle({ operation, path: hit.rest, data }, scoped) };
  }

  /**
   * The help of a path under a mounted engine, its pattern from the namespace root
   * (`secret/data/*path`); undefined when no mount serves the path.
   */
  async engineHelp(namespace: string, path: string): Promise<PathHelp | undefined> {
    const hit = this.mounts.resolve(namespace, path);
    if (!hit) return undefined;
    const help = this.engineOf(hit.entry).help?.(hit.rest);
    const mount = hit.entry.path;
    if (help === undefined) {
      return { pattern: mount, synopsis: `The ${hit.entry.type} secrets engine mounted at ${mount}.`, operations: {}, fields: [], description: hit.entry.description };
    }
    return { ...help, pattern: `${mount}${help.pattern}` };
  }

  async wrap(reply: { data: Record<string, unknown> | null; auth?: Record<string, unknown> | null }, ttlSeconds: number, creationPath: string): Promise<Record<string, unknown>> {
    const info = await this.wrapping.wrap(reply, ttlSeconds, creationPath);
    return { ...info };
  }
}
