/**
 * The approle auth method over one mount's store: roles with a role ID and token parameters,
 * secret IDs issued per role, and login with both. Layout under the mount's data prefix:
 *
 *   role/<name>                    the role (JSON, includes its role_id)
 *   role-id/<sha256 of role_id>    -> role name
 *   secret-id/<name>/<sha256>      a secret ID: accessor, expiry, uses left, metadata
 *   accessor/<name>/<accessor>     -> the secret ID's sha256
 *
 * Secret IDs are stored only as SHA-256 digests: generated ones are 122-bit random UUIDs, so no KDF
 * is needed to make a stolen store useless (a custom secret ID is as strong as its caller made it).
 * A lookup answers a secret ID's properties, never the secret ID itself. A login checks everything first and then commits the spent use
 * together with the token (LoginIssuer), under the secret ID's lock: a refused login spends nothing
 * and a last use is never spent twice.
 *
 *   const ar = methods.approle(entry);
 *   await ar.writeRole('web', { params: { token_policies: ['app'] }, secret_id_num_uses: 1 });
 *   const { secret_id } = await ar.generateSecretId('web', {});
 *   await ar.login((await ar.readRoleId('web')).role_id, secret_id);
 */
import { hash, randomUUID } from 'node:crypto';
import { InvalidRequest, NotFound } from '../../core/errors.js';
import type { KeyedMutex } from '../../core/keyed-mutex.js';
import type { Op, Store } from '../../storage/store.js';
import { rfc3339 } from '../token-entry.js';
import { LoginIssuer, NO_TOKEN_PARAMS, mergeParams, paramsView, type LoginResult, type TokenParams } from './login.js';
import { dataPrefix, type AuthEntry } from './table.js';
import { checkName } from './userpass.js';

interface RoleRecord extends TokenParams {
  readonly role_id: string;
  readonly bind_secret_id: boolean;
  /** Seconds; 0 = secret IDs never expire. */
  readonly secret_id_ttl: number;
  /** 0 = unlimited. */
  readonly secret_id_num_uses: number;
}

interface SecretIdRecord {
  readonly accessor: string;
  readonly creation_time: number;
  /** Unix seconds; 0 = never. */
  readonly expiration_time: number;
  /** Uses left; 0 = unlimited. */
  readonly num_uses: number;
  readonly metadata: Record<string, string>;
  /** Unix seconds of the last spent use; absent until then (records before it too): creation_time. */
  readonly last_updated_time?: number;
}

export interface RoleInput {
  readonly params: Partial<TokenParams>;
  readonly role_id?: string;
  readonly bind_secret_id?: boolean;
  readonly secret_id_ttl?: number;
  readonly secret_id_num_uses?: number;
}

export interface SecretIdInput {
  readonly metadata?: Record<string, string>;
  readonly ttl?: number;
  readonly num_uses?: number;
}

const INVALID = 'invalid role or secret ID';
/** Go's zero time.Time, which Vault shows as the expiration of a secret ID that never expires. */
const NEVER = '0001-01-01T00:00:00Z';
const sha = (s: string): string => hash('sha256', s, 'hex');
const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

export class AppRole {
  constructor(
    private readonly entry: AuthEntry,
    /** Scoped to the mount's data prefix (`dataPrefix(entry)`). */
    private readonly store: Store,
    private readonly locks: KeyedMutex,
    private readonly issuer: LoginIssuer,
    private readonly now: () => number,
  ) {}

  async #role(name: string): Promise<RoleRecord | undefined> {
    const raw = await this.store.get(`role/${name}`);
    return raw ? (JSON.parse(raw.toString('utf8')) as RoleRecord) : undefined;
  }

  async #mustRole(rawName: string): Promise<{ name: string; role: RoleRecord }> {
    const name = rawName.toLowerCase();
    const role = await this.#role(name);
    if (role === undefined) throw new InvalidRequest(`role "${rawName.slice(0, 64)}" does not exist`);
    return { name, role };
  }

  /** Role writes are rare: one lock per mount keeps role IDs unique without ordering rules. */
  #roles<T>(fn: () => Promise<T>): Promise<T> {
    return this.locks.run(`${this.entry.uuid}/roles`, fn);
  }

  /** A role_id another role holds is refused; undefined when free (or already `name`'s). */
  async #roleIdTaken(roleId: string, name: string): Promise<boolean> {
    const owner = await this.store.get(`role-id/${sha(roleId)}`);
    return owner !== undefined && owner.toString('utf8') !== name;
  }

  async writeRole(rawName: string, input: RoleInput): Promise<void> {
    const name = checkName('role_name', rawName);
    if (input.bind_secret_id === false) throw new InvalidRequest('at least one constraint should be enabled on the role');
    if (input.role_id !== undefined && input.role_id.trim() === '') throw new InvalidRequest('missing role_id');
    await this.#roles(async () => {
      const existing = await this.#role(name);
      const role_id = input.role_id ?? existing?.role_id ?? randomUUID();
      if (await this.#roleIdTaken(role_id, name)) throw new InvalidRequest('role_id already in use');
      const role: RoleRecord = {
        ...mergeParams(existing ?? NO_TOKEN_PARAMS, input.params),
        role_id,
        bind_secret_id: true,
        secret_id_ttl: input.secret_id_ttl ?? existing?.secret_id_ttl ?? 0,
        secret_id_num_uses: input.secret_id_num_uses ?? existing?.secret_id_num_uses ?? 0,
      };
      const ops: Op[] = [{ type: 'put', key: `role/${name}`, value: json(role) }];
      if (existing !== undefined && existing.role_id !== role_id) ops.push({ type: 'del', key: `role-id/${sha(existing.role_id)}` });
      ops.push({ type: 'put', key: `role-id/${sha(role_id)}`, value: Buffer.from(name) });
      await this.store.commit(ops);
    });
  }

  async readRole(rawName: string): Promise<Record<string, unknown> | undefined> {
    const role = await this.#role(rawName.toLowerCase());
    if (role === undefined) return undefined;
    return {
      ...paramsView(role),
      bind_secret_id: role.bind_secret_id,
      secret_id_ttl: role.secret_id_ttl,
      secret_id_num_uses: role.secret_id_num_uses,
      secret_id_bound_cidrs: null,
      local_secret_ids: false,
      period: 0,
    };
  }

  async listRoles(): Promise<string[]> {
    return (await this.store.list('role/')).filter((k) => !k.endsWith('/'));
  }

  /** Removes the role, its role ID and every secret ID issued for it. */
  async deleteRole(rawName: string): Promise<void> {
    const name = rawName.toLowerCase();
    await this.#roles(async () => {
      const role = await this.#role(name);
      if (role === undefined) return;
      const ops: Op[] = [{ type: 'del', key: `role/${name}` }, { type: 'del', key: `role-id/${sha(role.role_id)}` }];
      for (const h of await this.store.list(`secret-id/${name}/`)) ops.push({ type: 'del', key: `secret-id/${name}/${h}` });
      for (const a of await this.store.list(`accessor/${name}/`)) ops.push({ type: 'del', key: `accessor/${name}/${a}` });
      await this.store.commit(ops);
    });
  }

  async readRoleId(rawName: string): Promise<{ role_id: string }> {
    const { role } = await this.#mustRole(rawName);
    return { role_id: role.role_id };
  }

  async setRoleId(rawName: string, roleId: string): Promise<void> {
    await this.#mustRole(rawName);
    await this.writeRole(rawName, { params: {}, role_id: roleId });
  }

  /** A new secret ID; its ttl and uses may narrow the role's, never widen them. */
  generateSecretId(rawName: string, input: SecretIdInput): Promise<Record<string, unknown>> {
    return this.#issue(rawName, randomUUID(), input);
  }

  /** A secret ID the caller chose, on the same terms; one the role already has is refused. */
  createCustomSecretId(rawName: string, secretId: string, input: SecretIdInput): Promise<Record<string, unknown>> {
    if (secretId === '') throw new InvalidRequest('missing secret_id');
    return this.#issue(rawName, secretId, input);
  }

  async #issue(rawName: string, secretId: string, input: SecretIdInput): Promise<Record<string, unknown>> {
    const name = rawName.toLowerCase();
    const role = await this.#role(name);
    // Vault's secret-id and custom-secret-id answer an unknown role with 404 (ErrUnsupportedPath).
    if (role === undefined) throw new NotFound(`role "${rawName.slice(0, 64)}" does not exist`);
    const ttl = input.ttl ?? role.secret_id_ttl;
    const uses = input.num_uses ?? role.secret_id_num_uses;
    if (role.secret_id_ttl > 0 && (ttl === 0 || ttl > role.secret_id_ttl)) throw new InvalidRequest("ttl cannot be longer than the role's secret_id_ttl");
    if (role.secret_id_num_uses > 0 && (uses === 0 || uses > role.secret_id_num_uses)) throw new InvalidRequest("num_uses cannot be higher than the role's secret_id_num_uses");
    const h = sha(secretId);
    const key = `secret-id/${name}/${h}`;
    // The secret ID's lock (login's too): two writers of one custom secret ID cannot both see it free.
    return this.locks.run(`${this.entry.uuid}/secret-id/${h}`, async () => {
      // Vault answers this with a 500; it is the caller's input, hence a 400 with Vault's text.
      if ((await this.store.get(key)) !== undefined) throw new InvalidRequest('failed to store secret_id: SecretID is already registered');
      const accessor = randomUUID();
      const now = Math.floor(this.now() / 1000);
      const record: SecretIdRecord = { accessor, creation_time: now, expiration_time: ttl > 0 ? now + ttl : 0, num_uses: uses, metadata: { ...(input.metadata ?? {}) } };
      await this.store.commit([
        { type: 'put', key, value: json(record) },
        { type: 'put', key: `accessor/${name}/${accessor}`, value: Buffer.from(h) },
      ]);
      return { secret_id: secretId, secret_id_accessor: accessor, secret_id_ttl: ttl, secret_id_num_uses: uses };
    });
  }

  async #secret(name: string, h: string): Promise<SecretIdRecord | undefined> {
    const raw = await this.store.get(`secret-id/${name}/${h}`);
    return raw ? (JSON.parse(raw.toString('utf8')) as SecretIdRecord) : undefined;
  }

  /** The secret ID's digest its accessor names under the role; undefined when none. */
  async #byAccessor(name: string, accessor: string): Promise<string | undefined> {
    if (accessor.includes('/')) return undefined;
    return (await this.store.get(`accessor/${name}/${accessor}`))?.toString('utf8');
  }

  /** Vault's view of a secret ID (its lookup): everything but the secret ID itself. */
  #view(s: SecretIdRecord): Record<string, unknown> {
    return {
      cidr_list: [],
      creation_time: rfc3339(s.creation_time),
      expiration_time: s.expiration_time > 0 ? rfc3339(s.expiration_time) : NEVER,
      last_updated_time: rfc3339(s.last_updated_time ?? s.creation_time),
      metadata: { ...s.metadata },
      secret_id_accessor: s.accessor,
      secret_id_num_uses: s.num_uses,
      secret_id_ttl: s.expiration_time > 0 ? s.expiration_time - s.creation_time : 0,
      token_bound_cidrs: [],
    };
  }

  /** A secret ID's properties; undefined when the role has no such secret ID (Vault's 204). */
  async lookupSecretId(rawName: string, secretId: string): Promise<Record<string, unknown> | undefined> {
    if (secretId === '') throw new InvalidRequest('missing secret_id');
    const { name } = await this.#mustRole(rawName);
    const s = await this.#secret(name, sha(secretId));
    return s === undefined ? undefined : this.#view(s);
  }

  /** A secret ID's properties by its accessor; undefined when the role has no such accessor. */
  async lookupSecretIdAccessor(rawName: string, accessor: string): Promise<Record<string, unknown> | undefined> {
    if (accessor === '') throw new InvalidRequest('missing secret_id_accessor');
    const { name } = await this.#mustRole(rawName);
    const h = await this.#byAccessor(name, accessor);
    const s = h === undefined ? undefined : await this.#secret(name, h);
    return s === undefined ? undefined : this.#view(s);
  }

  /** Removes a secret ID and its accessor; one the role does not have is no error (Vault's 204). */
  async destroySecretId(rawName: string, secretId: string): Promise<void> {
    if (secretId === '') throw new InvalidRequest('missing secret_id');
    const { name } = await this.#mustRole(rawName);
    await this.#destroy(name, sha(secretId));
  }

  /** Removes the secret ID an accessor names; false when the role has no such accessor. */
  async destroySecretIdAccessor(rawName: string, accessor: string): Promise<boolean> {
    if (accessor === '') throw new InvalidRequest('missing secret_id_accessor');
    const { name } = await this.#mustRole(rawName);
    const h = await this.#byAccessor(name, accessor);
    return h !== undefined && (await this.#destroy(name, h));
  }

  /** Under the secret ID's lock, so a login in flight either spends it first or finds it gone. */
  #destroy(name: string, h: string): Promise<boolean> {
    return this.locks.run(`${this.entry.uuid}/secret-id/${h}`, async () => {
      const s = await this.#secret(name, h);
      if (s === undefined) return false;
      await this.store.commit([{ type: 'del', key: `secret-id/${name}/${h}` }, { type: 'del', key: `accessor/${name}/${s.accessor}` }]);
      return true;
    });
  }

  /** Accessors of the role's live secret IDs. */
  async listSecretIdAccessors(rawName: string): Promise<string[]> {
    const { name } = await this.#mustRole(rawName);
    return (await this.store.list(`accessor/${name}/`)).filter((k) => !k.endsWith('/'));
  }

  async login(roleId: string, secretId: string): Promise<LoginResult> {
    if (roleId === '') throw new InvalidRequest('missing role_id');
    if (secretId === '') throw new InvalidRequest('missing secret_id');
    const owner = await this.store.get(`role-id/${sha(roleId)}`);
    const name = owner?.toString('utf8');
    const role = name === undefined ? undefined : await this.#role(name);
    if (name === undefined || role === undefined || role.role_id !== roleId) throw new InvalidRequest(INVALID);
    const h = sha(secretId);
    const key = `secret-id/${name}/${h}`;
    return this.locks.run(`${this.entry.uuid}/secret-id/${h}`, async () => {
      const raw = await this.store.get(key);
      const secret = raw ? (JSON.parse(raw.toString('utf8')) as SecretIdRecord) : undefined;
      if (secret === undefined) throw new InvalidRequest(INVALID);
      if (secret.expiration_time > 0 && secret.expiration_time * 1000 <= this.now()) throw new InvalidRequest(INVALID);
      // Absolute keys: these ops are committed by the token store, with the token.
      const abs = (k: string): string => dataPrefix(this.entry) + k;
      const spend: Op[] =
        secret.num_uses === 1
          ? [{ type: 'del', key: abs(key) }, { type: 'del', key: abs(`accessor/${name}/${secret.accessor}`) }]
          : secret.num_uses > 1
            ? [{ type: 'put', key: abs(key), value: json({ ...secret, num_uses: secret.num_uses - 1, last_updated_time: Math.floor(this.now() / 1000) }) }]
            : [];
      const meta = { ...secret.metadata, role_name: name };
      return this.issuer.login(this.entry, role, meta, 'approle', `auth/${this.entry.path}login`, spend);
    });
  }
}
