/**
 * Where a transit mount keeps its keys: one record per key at `policy/<name>` (Vault's layout),
 * read through the store's decode memo (a hot key is decrypted and parsed once per stored
 * version), changed one key at a time (a per-key lock across the node: the mount's storage
 * prefix and the name).
 *
 *   const p = await loadPolicy(store, 'app');                       // undefined when absent
 *   await changePolicy(store, 'app', (p) => rotate(p!, now, gen));  // read, change, commit
 */
import { InvalidRequest } from '../../core/errors.js';
import { KeyedMutex } from '../../core/keyed-mutex.js';
import { getDecoded, ScopedStore, type Store } from '../../storage/store.js';
import type { KeyPolicy } from './policy.js';

export const POLICY_PREFIX = 'policy/';

const locks = new KeyedMutex();

/** Vault's transit key names: one path segment. */
export function checkName(name: string): string {
  if (name === '' || name.includes('/') || name === '.' || name === '..' || name.length > 256) throw new InvalidRequest('invalid key name');
  return name;
}

const decode = (raw: Buffer): KeyPolicy => JSON.parse(raw.toString('utf8')) as KeyPolicy;

export function loadPolicy(store: Store, name: string): Promise<Readonly<KeyPolicy> | undefined> {
  return getDecoded(store, POLICY_PREFIX + checkName(name), decode);
}

/** The key, or InvalidRequest with `missing` (each operation names a missing key in its own words, as Vault's). */
export async function requirePolicy(store: Store, name: string, missing: string): Promise<Readonly<KeyPolicy>> {
  const p = await loadPolicy(store, name);
  if (p === undefined) throw new InvalidRequest(missing);
  return p;
}

export const policyOp = (p: KeyPolicy): { type: 'put'; key: string; value: Buffer } => ({ type: 'put', key: POLICY_PREFIX + p.name, value: Buffer.from(JSON.stringify(p), 'utf8') });

/**
 * Runs `change` on the key's current record under its lock and commits what it returns (nothing
 * when it returns the record unchanged or undefined). The committed record, or the current one.
 */
export async function changePolicy(
  store: Store,
  name: string,
  change: (current: Readonly<KeyPolicy> | undefined) => KeyPolicy | undefined | Promise<KeyPolicy | undefined>,
): Promise<Readonly<KeyPolicy> | undefined> {
  checkName(name);
  const scope = store instanceof ScopedStore ? store.prefix : '';
  return locks.run(`${scope}\0${name}`, async () => {
    const current = await loadPolicy(store, name);
    const next = await change(current);
    if (next === undefined || next === current) return current;
    await store.commit([policyOp(next)]);
    return next;
  });
}

/** Deletes the key's record under its lock, after `check` approved the current one. */
export async function deletePolicy(store: Store, name: string, check: (current: Readonly<KeyPolicy> | undefined) => void): Promise<void> {
  checkName(name);
  const scope = store instanceof ScopedStore ? store.prefix : '';
  await locks.run(`${scope}\0${name}`, async () => {
    check(await loadPolicy(store, name));
    await store.commit([{ type: 'del', key: POLICY_PREFIX + name }]);
  });
}

export function listPolicies(store: Store): Promise<string[]> {
  return store.list(POLICY_PREFIX);
}
