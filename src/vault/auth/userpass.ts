/**
 * The userpass auth method over one mount's store: users with a password (scrypt, password.ts)
 * and token parameters, and login. Usernames are case-insensitive (stored lowercased), as Vault.
 *
 *   const up = methods.userpass(entry);
 *   await up.write('bob', { password: 'pw', params: { token_policies: ['app'] } });
 *   const { auth } = await up.login('bob', 'pw');     // InvalidRequest for any bad credential
 *
 * A refused login says only "invalid username or password", after the same scrypt work whether
 * or not the user exists. No password or hash ever leaves this module except as the stored hash.
 */
import { InvalidRequest } from '../../core/errors.js';
import type { KeyedMutex } from '../../core/keyed-mutex.js';
import type { Store } from '../../storage/store.js';
import { LoginIssuer, NO_TOKEN_PARAMS, mergeParams, paramsView, type LoginResult, type TokenParams } from './login.js';
import { hashPassword, verifyPassword } from './password.js';
import type { AuthEntry } from './table.js';

/** Vault's GenericNameRegex. */
const NAME = /^\w(?:[\w.@-]*\w)?$/;

/** `raw` lowercased, or InvalidRequest naming `field`. */
export function checkName(field: string, raw: string): string {
  const n = raw.toLowerCase();
  if (n.length > 256 || !NAME.test(n)) throw new InvalidRequest(`invalid ${field} "${raw.slice(0, 64)}"`);
  return n;
}

interface UserRecord extends TokenParams {
  readonly password_hash: string;
}

const USERS = 'user/';

export interface UserInput {
  readonly password?: string;
  readonly params: Partial<TokenParams>;
}

export class Userpass {
  constructor(
    private readonly entry: AuthEntry,
    private readonly store: Store,
    private readonly locks: KeyedMutex,
    private readonly issuer: LoginIssuer,
  ) {}

  async #get(name: string): Promise<UserRecord | undefined> {
    const raw = await this.store.get(USERS + name);
    return raw ? (JSON.parse(raw.toString('utf8')) as UserRecord) : undefined;
  }

  #lock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(`${this.entry.uuid}/user/${name}`, fn);
  }

  /** Creates or updates; a new user needs a password, an update keeps whatever is not given. */
  async write(rawName: string, input: UserInput): Promise<void> {
    const name = checkName('username', rawName);
    if (input.password !== undefined && input.password === '') throw new InvalidRequest('missing password');
    await this.#lock(name, async () => {
      const existing = await this.#get(name);
      if (existing === undefined && input.password === undefined) throw new InvalidRequest('missing password');
      const password_hash = input.password !== undefined ? await hashPassword(input.password) : (existing as UserRecord).password_hash;
      const record: UserRecord = { ...mergeParams(existing ?? NO_TOKEN_PARAMS, input.params), password_hash };
      await this.store.commit([{ type: 'put', key: USERS + name, value: Buffer.from(JSON.stringify(record)) }]);
    });
  }

  async setPassword(rawName: string, password: string): Promise<void> {
    const name = checkName('username', rawName);
    if (password === '') throw new InvalidRequest('missing password');
    await this.#lock(name, async () => {
      const existing = await this.#get(name);
      if (existing === undefined) throw new InvalidRequest('username does not exist');
      const record: UserRecord = { ...existing, password_hash: await hashPassword(password) };
      await this.store.commit([{ type: 'put', key: USERS + name, value: Buffer.from(JSON.stringify(record)) }]);
    });
  }

  /** The user's token parameters; never the password or its hash. */
  async read(rawName: string): Promise<Record<string, unknown> | undefined> {
    const user = await this.#get(rawName.toLowerCase());
    return user === undefined ? undefined : paramsView(user);
  }

  async list(): Promise<string[]> {
    return (await this.store.list(USERS)).filter((k) => !k.endsWith('/'));
  }

  async delete(rawName: string): Promise<void> {
    const name = rawName.toLowerCase();
    await this.#lock(name, () => this.store.commit([{ type: 'del', key: USERS + name }]));
  }

  async login(rawName: string, password: string): Promise<LoginResult> {
    const name = rawName.toLowerCase();
    const user = NAME.test(name) ? await this.#get(name) : undefined;
    const match = await verifyPassword(password, user?.password_hash);
    if (user === undefined || !match) throw new InvalidRequest('invalid username or password');
    const mount = this.entry.path.slice(0, -1).replace(/\//g, '-');
    return this.issuer.login(this.entry, user, { username: name }, `${mount}-${name}`, `auth/${this.entry.path}login/${name}`);
  }
}
