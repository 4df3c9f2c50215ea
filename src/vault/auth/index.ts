/**
 * Auth methods mounted under `auth/` (besides the built-in token method): the mount table, the
 * userpass and approle methods bound to a mount, and disabling a mount with everything it owns.
 *
 *   const methods = new AuthMethods(() => core.store(), core.tokens, { limits, now });
 *   await methods.table.enable('', 'userpass/', { type: 'userpass' });
 *   const hit = await methods.table.resolve('', 'userpass/login/bob');
 *   await methods.userpass(hit.entry).login('bob', 'pw');
 */
import { KeyedMutex } from '../../core/keyed-mutex.js';
import { ScopedStore, type Op, type Store } from '../../storage/store.js';
import type { TokenStore, TtlLimits } from '../tokens.js';
import { AppRole } from './approle.js';
import { LoginIssuer, issuedIndex } from './login.js';
import { AuthTable, dataPrefix, type AuthEntry } from './table.js';
import { Userpass } from './userpass.js';

export { AUTH_TYPES, tokenAccessor, type AuthEntry, type AuthEnableInput, type AuthType } from './table.js';
export type { TokenParams, LoginResult } from './login.js';
export type { AppRole, RoleInput, SecretIdInput } from './approle.js';
export type { Userpass, UserInput } from './userpass.js';

export interface AuthMethodsOptions {
  readonly limits: TtlLimits;
  readonly now: () => number;
}

const BATCH = 500;

export class AuthMethods {
  readonly table: AuthTable;
  readonly #locks = new KeyedMutex();
  readonly #issuer: LoginIssuer;

  constructor(
    private readonly store: () => Store,
    private readonly tokens: TokenStore,
    private readonly opts: AuthMethodsOptions,
  ) {
    this.table = new AuthTable(store);
    this.#issuer = new LoginIssuer(tokens, opts.limits);
  }

  userpass(entry: AuthEntry): Userpass {
    return new Userpass(entry, new ScopedStore(this.store(), dataPrefix(entry)), this.#locks, this.#issuer);
  }

  approle(entry: AuthEntry): AppRole {
    return new AppRole(entry, new ScopedStore(this.store(), dataPrefix(entry)), this.#locks, this.#issuer, this.opts.now);
  }

  /**
   * Removes the mount (unreachable from that first commit), revokes every token it issued on this
   * cluster (with their children), then deletes its data. Tokens it issued on other clusters (a
   * performance secondary) are theirs: they stay valid until they expire there.
   */
  async disable(namespace: string, path: string): Promise<void> {
    const entry = await this.table.remove(namespace, path);
    if (!entry) return;
    const index = issuedIndex(entry);
    let batch: Op[] = [];
    const flush = async (force: boolean): Promise<void> => {
      if (batch.length === 0 || (!force && batch.length < BATCH)) return;
      await this.store().commit(batch);
      batch = [];
    };
    for (const hash of await this.store().list(index)) {
      await this.tokens.revokeTree(hash);
      batch.push({ type: 'del', key: index + hash });
      await flush(false);
    }
    const walk = async (dir: string): Promise<void> => {
      for (const child of await this.store().list(dir)) {
        if (child.endsWith('/')) await walk(dir + child);
        else batch.push({ type: 'del', key: dir + child });
        await flush(false);
      }
    };
    await walk(dataPrefix(entry));
    await flush(true);
  }
}
