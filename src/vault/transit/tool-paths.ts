/**
 * Transit's keyless and HMAC paths (Vault's path_random.go with helper/random, path_hash.go,
 * path_hmac.go): random bytes, hashes, HMACs under a key's version and their verification.
 * Nothing here writes: served by whichever node the client asks.
 *
 *   random({ bytes: 16, format: 'hex' }, undefined, undefined);     // { random_bytes: '...' }
 *   await hmac(store, 'app', { input: 'aGk=' }, undefined);        // { hmac: 'vault:v1:...' }
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import type { Store } from '../../storage/store.js';
import type { LogicalResponse } from '../logical.js';
import { answerItems, decodeInput, itemError, splitVersioned, versioned, type Outcome } from './batch.js';
import { batchItems, intField, stringField, strictBase64, type BatchItem } from './fields.js';
import { requirePolicy } from './keys-store.js';
import type { KeyPolicy } from './policy.js';

type Data = Readonly<Record<string, unknown>>;

/** Vault's hash names (keysutil HashTypeMap) and node's. */
export const HASHES: Readonly<Record<string, string>> = {
  sha1: 'sha1',
  'sha2-224': 'sha224',
  'sha2-256': 'sha256',
  'sha2-384': 'sha384',
  'sha2-512': 'sha512',
  'sha3-224': 'sha3-224',
  'sha3-256': 'sha3-256',
  'sha3-384': 'sha3-384',
  'sha3-512': 'sha3-512',
};

/** helper/random's APIMaxBytes. */
const RANDOM_MAX_BYTES = 128 * 1024;
const SOURCES = ['platform', 'seal', 'all'];

/** random[/<source>][/<bytes>]: the URL's two optional segments read as Vault reads them. */
export function random(data: Data, source: string | undefined, urlBytes: string | undefined): LogicalResponse {
  let bytes: number;
  let src = 'platform';
  const parse = (s: string): number => {
    if (!/^[+-]?\d+$/.test(s)) throw new InvalidRequest(`error parsing url-set byte count: strconv.Atoi: parsing ${JSON.stringify(s.slice(0, 32))}: invalid syntax`);
    return Number(s);
  };
  if (source === undefined || source === '') bytes = intField(data, 'bytes', 32);
  else if ((urlBytes === undefined || urlBytes === '') && SOURCES.includes(source)) {
    src = source;
    bytes = intField(data, 'bytes', 32);
  } else if (urlBytes === undefined || urlBytes === '') bytes = parse(source);
  else {
    src = source;
    bytes = parse(urlBytes);
  }
  const format = stringField(data, 'format', 'base64');
  if (bytes < 1) throw new InvalidRequest("'bytes' cannot be less than 1");
  if (bytes > RANDOM_MAX_BYTES) throw new InvalidRequest(`'bytes' should be less than ${RANDOM_MAX_BYTES}`);
  if (format !== 'hex' && format !== 'base64') throw new InvalidRequest(`unsupported encoding format "${format.slice(0, 32)}"; must be "hex" or "base64"`);
  if (!SOURCES.includes(src)) throw new InvalidRequest(`unsupported entropy source "${src.slice(0, 32)}"; must be "platform" or "seal", or "all"`);
  const out = randomBytes(bytes).toString(format);
  return { data: { random_bytes: out }, ...(src === 'seal' ? { warnings: ['no seal/entropy augmentation available, using platform entropy source'] } : {}) };
}

/** hash[/<algorithm>]. */
export function hash(data: Data, urlAlgorithm: string | undefined): LogicalResponse {
  const raw = stringField(data, 'input');
  if (raw === '') throw new InvalidRequest('input missing');
  let input: Buffer;
  try {
    input = strictBase64(raw);
  } catch (e) {
    throw new InvalidRequest(`unable to decode input as base64: ${(e as InvalidRequest).messages.join('; ')}`);
  }
  const format = stringField(data, 'format', 'hex');
  if (format !== 'hex' && format !== 'base64') throw new InvalidRequest(`unsupported encoding format ${format.slice(0, 32)}; must be "hex" or "base64"`);
  const algorithm = urlAlgorithm || stringField(data, 'algorithm', 'sha2-256');
  const nodeName = algorithm === 'sha1' ? undefined : HASHES[algorithm];
  if (nodeName === undefined) throw new InvalidRequest(`unsupported algorithm ${algorithm.slice(0, 32)}`);
  return { data: { sum: createHash(nodeName).update(input).digest(format) } };
}

function hmacKey(p: KeyPolicy, version: number): Buffer {
  if (version < 0) throw new InvalidRequest('key version does not exist (cannot be negative)');
  if (version > p.latest_version) throw new InvalidRequest(`key version does not exist; latest key version is ${p.latest_version}`);
  const v = p.keys[String(version)];
  if (v === undefined) throw new InvalidRequest('no such key version');
  return Buffer.from(p.type === 'hmac' ? (v.key ?? '') : v.hmac_key, 'base64');
}

/** The URL's algorithm, else the named fields in order (verify reads `hash_algorithm` first), else SHA2-256. */
function algorithmOf(data: Data, urlAlgorithm: string | undefined, error: (a: string) => string, fields: readonly string[] = ['algorithm']): string {
  const algorithm = urlAlgorithm || fields.map((f) => stringField(data, f)).find((a) => a !== '') || 'sha2-256';
  const nodeName = HASHES[algorithm];
  if (nodeName === undefined) throw new InvalidRequest(error(algorithm.slice(0, 32)));
  return nodeName;
}

/** hmac/<name>[/<algorithm>]. */
export async function hmac(store: Store, name: string, data: Data, urlAlgorithm: string | undefined): Promise<LogicalResponse> {
  let version = intField(data, 'key_version');
  const p = await requirePolicy(store, name, 'encryption key not found');
  if (version === 0) version = p.latest_version;
  else if (version !== p.latest_version && p.min_encryption_version > 0 && version < p.min_encryption_version) {
    throw new InvalidRequest('cannot generate HMAC: version is too old (disallowed by policy)');
  }
  const key = hmacKey(p, version);
  const algorithm = algorithmOf(data, urlAlgorithm, (a) => `unsupported algorithm "${a}"`);
  const batch = batchItems(data);
  if (batch === undefined && stringField(data, 'input') === '') throw new InvalidRequest('missing input for HMAC');
  const out = (batch ?? [data]).map((item): Outcome => {
    const input = decodeInput(item, 'missing input for HMAC');
    if (!Buffer.isBuffer(input)) return input;
    return { hmac: versioned(version, createHmac(algorithm, key).update(input).digest('base64')) };
  });
  return answerItems(out, batch, { failedBatch: 'ok' });
}

function verifyItem(p: KeyPolicy, algorithm: string, item: BatchItem): Outcome {
  const input = decodeInput(item, 'missing input');
  if (!Buffer.isBuffer(input)) return input;
  const mac = stringField(item, 'hmac');
  if (mac === '') return { error: 'missing hmac' };
  try {
    const { version, rest } = splitVersioned(mac, 'hmac');
    let given: Buffer;
    try {
      given = strictBase64(rest);
    } catch (e) {
      return { error: `unable to decode verification HMAC as base64: ${(e as InvalidRequest).messages.join('; ')}` };
    }
    if (version > p.latest_version) return { error: 'invalid HMAC: version is too new' };
    if (p.min_decryption_version > 0 && version < p.min_decryption_version) return { error: 'cannot verify HMAC: version is too old (disallowed by policy)' };
    const sum = createHmac(algorithm, hmacKey(p, version)).update(input).digest();
    return { valid: sum.length === given.length && timingSafeEqual(sum, given) };
  } catch (e) {
    return itemError(e);
  }
}

/** verify/<name>[/<algorithm>] with `hmac`. */
export async function verifyHmac(store: Store, name: string, data: Data, urlAlgorithm: string | undefined): Promise<LogicalResponse> {
  const p = await requirePolicy(store, name, 'encryption key not found');
  const algorithm = algorithmOf(data, urlAlgorithm, (a) => `invalid hash algorithm "${a}"`, ['hash_algorithm', 'algorithm']);
  const batch = batchItems(data);
  const out = (batch ?? [data]).map((item) => verifyItem(p, algorithm, item));
  return answerItems(out, batch, { failedBatch: 'ok' });
}
