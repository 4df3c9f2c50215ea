/**
 * The audit trail's hashing, as Vault's (sdk/helper/salt and audit/hashstructure.go): a string is
 * replaced by `hmac-sha256:<hex>` of HMAC-SHA256 keyed by the device's salt, and every string in a
 * map or list is, at any depth; numbers, booleans and null stay as they are.
 *
 *   hashString('4f1c...', 's3cr3t')             // 'hmac-sha256:9b0e...'
 *   hashValues('4f1c...', { a: ['x', 1] })      // { a: ['hmac-sha256:...', 1] }
 */
import { createHmac } from 'node:crypto';

export function hashString(salt: string, value: string): string {
  return `hmac-sha256:${createHmac('sha256', salt).update(value).digest('hex')}`;
}

/** A copy of `value` with every string hashed (map keys are kept, as Vault keeps them). */
export function hashValues(salt: string, value: unknown): unknown {
  if (typeof value === 'string') return hashString(salt, value);
  if (Array.isArray(value)) return value.map((v) => hashValues(salt, v));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = hashValues(salt, v);
    return out;
  }
  return value;
}
