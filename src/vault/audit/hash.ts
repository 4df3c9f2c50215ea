/**
 * The audit trail's hashing, as Vault's (sdk/helper/salt and audit/hashstructure.go): a string is
 * replaced by `hmac-sha256:<hex>` of HMAC-SHA256 keyed by the device's salt, and every string in a
 * map or list is, at any depth; numbers, booleans and null stay as they are.
 *
 *   hashString('4f1c...', 's3cr3t')             // 'hmac-sha256:9b0e...'
 *   hashValues('4f1c...', { a: ['x', 1] })      // { a: ['hmac-sha256:...', 1] }
 */
import { createHmac } from 'node:crypto';
import { deeplyFrozen } from '../../core/frozen.js';
import { deepFreeze } from '../../storage/store.js';

export function hashString(salt: string, value: string): string {
  return `hmac-sha256:${createHmac('sha256', salt).update(value).digest('hex')}`;
}

/**
 * Hashed copies of deeply frozen values (a stored record's shared decode: storage/store.ts
 * getDecoded), by identity and salt: frozen all the way down means it can never change, so a
 * secret read again is not hashed again; the entry goes when the decode does.
 */
const frozenMemo = new WeakMap<object, Map<string, unknown>>();

/** A copy of `value` with every string hashed (map keys are kept, as Vault keeps them). */
export function hashValues(salt: string, value: unknown): unknown {
  if (typeof value === 'string') return hashString(salt, value);
  if (value === null || typeof value !== 'object') return value;
  const frozen = Object.isFrozen(value) && (frozenMemo.has(value) || deeplyFrozen(value));
  const known = frozen ? frozenMemo.get(value)?.get(salt) : undefined;
  if (known !== undefined) return known;
  let out: unknown;
  if (Array.isArray(value)) out = value.map((v) => hashValues(salt, v));
  else {
    const o: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) o[k] = hashValues(salt, v);
    out = o;
  }
  if (frozen) {
    let bySalt = frozenMemo.get(value);
    if (bySalt === undefined) frozenMemo.set(value, (bySalt = new Map()));
    bySalt.set(salt, deepFreeze(out));
  }
  return out;
}

