/**
 * The approle auth method over one mount's store: roles with a role ID and token parameters,
 * secret IDs issued per role, and login with both. Layout under the mount's data prefix:
 *
 *   role/<name>                    the role (JSON, includes its role_id)
 *   role-id/<sha256 of role_id>    -> role name
 *   secret-id/<name>/<sha256>      a secret ID: accessor, expiry, uses left, metadata
 *   accessor/<name>/<accessor>     -> the secret ID's sha256
 *
 * Secret IDs are stored only as SHA-256 digests: they are 122-bit random UUIDs, so no KDF is needed
 * to make a stolen store useless. A login checks everything first and then commits the spent use
 * together with the token (LoginIssuer), under the secret ID's lock: a refused login spends nothing
 * and a last use is never spent twice.
 *
 *   const ar = methods.approle(entry);
 *   await ar.writeRole('web', { params: { token_policies: ['app'] }, secret_id_num_uses: 1 });
 *   const { secret_id } = await ar.generateSecretId('web', {});
 *   await ar.login((await ar.readRoleId('web')).role_id, secret_id);
 */
import { hash, randomUUID } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import type { KeyedMutex } from '../../core/keyed-mutex.js';
import type { Op, Store } from '../../storage/store.js';
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
  async generateSecretId(rawName: string, input: SecretIdInput): Promise<Record<string, unknown>> {
    const { name, role } = await this.#mustRole(rawName);
    const ttl = input.ttl ?? role.secret_id_ttl;
    const uses = input.num_uses ?? role.secret_id_num_uses;
    if (role.secret_id_ttl > 0 && (ttl === 0 || ttl > role.secret_id_ttl)) throw new InvalidRequest("ttl cannot be longer than the role's secret_id_ttl");
    if (role.secret_id_num_uses > 0 && (uses === 0 || uses > role.secret_id_num_uses)) throw new InvalidRequest("num_uses cannot be higher than the role's secret_id_num_uses");
    const secretId = randomUUID();
    const accessor = randomUUID();
    const now = Math.floor(this.now() / 1000);
    const record: SecretIdRecord = { accessor, creation_time: now, expiration_time: ttl > 0 ? now + ttl : 0, num_uses: uses, metadata: { ...(input.metadata ?? {}) } };
    const h = sha(secretId);
    await this.store.commit([
      { type: 'put', key: `secret-id/${name}/${h}`, value: json(record) },
      { type: 'put', key: `accessor/${name}/${accessor}`, value: Buffer.from(h) },
    ]);
    return { secret_id: secretId, secret_id_accessor: accessor, secret_id_ttl: ttl, secret_id_num_uses: uses };
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
            ? [{ type: 'put', key: abs(key), value: json({ ...secret, num_uses: secret.num_uses - 1 }) }]
            : [];
      const meta = { ...secret.metadata, role_name: name };
      return this.issuer.login(this.entry, role, meta, 'approle', `auth/${this.entry.path}login`, spend);
    });
  }
}
