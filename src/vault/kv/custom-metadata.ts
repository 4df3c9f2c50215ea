/**
 * Vault's limits on a key's custom_metadata: at most 64 pairs, keys 1..128 bytes, values 1..512
 * bytes, printable characters only. All violations are reported together.
 *
 *   checkCustomMetadata({ owner: 'ops' });   // throws InvalidRequest listing every violation
 */
import { InvalidRequest } from '../../core/errors.js';

const MAX_KEYS = 64;
const MAX_KEY_BYTES = 128;
const MAX_VALUE_BYTES = 512;
const PREFIX = 'custom_metadata validation failed';
/** Go's unicode.IsPrint: no control, format or separator characters other than the ASCII space. */
const UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]|(?! )\p{Zs}/u;

export function checkCustomMetadata(pairs: Readonly<Record<string, string>>): void {
  const entries = Object.entries(pairs);
  if (entries.length > MAX_KEYS) {
    throw new InvalidRequest(`${PREFIX}: payload must contain at most ${MAX_KEYS} keys, provided ${entries.length}`);
  }
  const errors: string[] = [];
  for (const [key, value] of entries) {
    const keyLen = Buffer.byteLength(key);
    if (keyLen === 0 || keyLen > MAX_KEY_BYTES) {
      errors.push(`${PREFIX}: length of key ${JSON.stringify(key)} is ${keyLen} but must be 0 < len(key) <= ${MAX_KEY_BYTES}`);
    }
    const valueLen = Buffer.byteLength(value);
    if (valueLen === 0 || valueLen > MAX_VALUE_BYTES) {
      errors.push(
        `${PREFIX}: length of value for key ${JSON.stringify(key)} is ${valueLen} but must be 0 < len(value) <= ${MAX_VALUE_BYTES}`,
      );
    }
    if (UNPRINTABLE.test(key)) errors.push(`${PREFIX}: key ${JSON.stringify(key)} contains unprintable characters`);
    if (UNPRINTABLE.test(value)) errors.push(`${PREFIX}: value for key ${JSON.stringify(key)} contains unprintable characters`);
  }
  if (errors.length > 0) throw new InvalidRequest(errors);
}
