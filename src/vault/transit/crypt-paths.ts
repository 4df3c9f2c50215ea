/**
 * encrypt, decrypt, rewrap and datakey (Vault's path_encrypt.go, path_decrypt.go, path_rewrap.go,
 * path_datakey.go): single values or `batch_input`, where every item answers on its own (`error`
 * in its place) and a batch with a failed item answers 400 with all the results, as Vault's.
 * Nothing here writes, except an encrypt that creates its missing key (Vault's upsert): on a
 * performance secondary that write is forwarded, every other request is served locally.
 *
 *   await encrypt(store, 'app', { plaintext: 'aGk=' }, deps);   // { ciphertext: 'vault:v1:...', key_version: 1 }
 */
import { randomBytes } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import type { Store } from '../../storage/store.js';
import type { LogicalResponse } from '../logical.js';
import { rsaDecrypt, rsaEncrypt, type AsymmetricMaterial } from './asymmetric.js';
import { answerItems, itemError, versioned, type Outcome } from './batch.js';
import { batchItems, boolField, intField, stringField, strictBase64, type BatchItem } from './fields.js';
import { changePolicy, loadPolicy, requirePolicy } from './keys-store.js';
import { encryptionVersion, isAsymmetric, isSymmetric, keyTypeOf, materialOf, newPolicy, supports, versionOf, type AsymmetricKeyType, type KeyPolicy, type KeyType } from './policy.js';
import { decryptValue, encryptValue, parseCiphertext } from './symmetric.js';

export interface CryptDeps {
  readonly now: () => Date;
  /** A new asymmetric version's key pair (RSA's generation runs off the event loop). */
  readonly generate: (type: AsymmetricKeyType) => Promise<AsymmetricMaterial>;
}

/** The key pair a new version of `type` takes (none for other types), made before a key's lock is taken. */
export function newMaterial(type: KeyType, deps: CryptDeps): Promise<AsymmetricMaterial | undefined> {
  return isAsymmetric(type) ? deps.generate(type) : Promise.resolve(undefined);
}

type Data = Readonly<Record<string, unknown>>;

/** Decodes an item's optional base64 field (context, associated_data). */
function optionalB64(item: BatchItem, name: string): Buffer | undefined {
  const v = stringField(item, name);
  return v === '' ? undefined : strictBase64(v);
}

/** Every item sets `context` or none does (Vault's rule, before anything is looked up). */
function sameContext(items: readonly BatchItem[]): boolean {
  const set = stringField(items[0] ?? {}, 'context') !== '';
  for (const i of items) if ((stringField(i, 'context') !== '') !== set) throw new InvalidRequest('context should be set either in all the request blocks or in none');
  return set;
}

const isRsa = (p: KeyPolicy): boolean => p.type.startsWith('rsa-');

interface SealInput {
  readonly plaintext: Buffer;
  readonly version: number;
  readonly context?: Buffer | undefined;
  readonly associatedData?: Buffer | undefined;
}

/** A ciphertext under the key, whatever its type: RSA with OAEP SHA-256 (keysutil), else symmetric.ts. */
function seal(p: KeyPolicy, i: SealInput): { ciphertext: string; version: number } {
  if (!isRsa(p)) return encryptValue(p, { plaintext: i.plaintext, version: i.version, ...(i.context ? { context: i.context } : {}), ...(i.associatedData ? { associatedData: i.associatedData } : {}) });
  const version = encryptionVersion(p, i.version);
  return { ciphertext: versioned(version, rsaEncrypt(materialOf(versionOf(p, version)), i.plaintext).toString('base64')), version };
}

function open(p: KeyPolicy, ciphertext: string, context: Buffer | undefined, associatedData: Buffer | undefined): Buffer {
  if (!isRsa(p)) return decryptValue(p, { ciphertext, ...(context ? { context } : {}), ...(associatedData ? { associatedData } : {}) }).plaintext;
  const { version, data } = parseCiphertext(p, ciphertext);
  let raw: Buffer;
  try {
    raw = strictBase64(data);
  } catch {
    throw new InvalidRequest('invalid ciphertext: could not decode base64');
  }
  return rsaDecrypt(materialOf(versionOf(p, version)), raw);
}

function encryptItem(p: KeyPolicy, item: BatchItem, index: number): Outcome {
  try {
    const plaintext = strictBase64(stringField(item, 'plaintext'));
    const context = optionalB64(item, 'context');
    const associatedData = optionalB64(item, 'associated_data');
    if (associatedData !== undefined && !supports.associatedData(p.type)) return { error: `'[${index}].associated_data' provided for non-AEAD cipher suite ${p.type}` };
    const { ciphertext, version } = seal(p, { plaintext, version: intField(item, 'key_version'), context, associatedData });
    return { ciphertext, key_version: version };
  } catch (e) {
    return itemError(e);
  }
}

export async function encrypt(store: Store, name: string, data: Data, deps: CryptDeps): Promise<LogicalResponse> {
  const batch = batchItems(data);
  if (batch === undefined && (data.plaintext === undefined || data.plaintext === null)) throw new InvalidRequest('missing plaintext to encrypt');
  const items: BatchItem[] = batch ?? [data];
  const contextSet = sameContext(items);
  let p = await loadPolicy(store, name);
  if (p === undefined) {
    // Vault's upsert: the key is made with the request's type; derived when a context is given.
    const asked = stringField(data, 'type', 'aes256-gcm96');
    if (asked.startsWith('ecdsa-')) throw new InvalidRequest(`key type ${asked.slice(0, 32)} not supported for this operation`);
    const type = keyTypeOf(asked);
    if (!isSymmetric(type)) throw new InvalidRequest(`unknown key type ${type}`);
    const convergent = boolField(data, 'convergent_encryption') === true;
    if (convergent && !contextSet) throw new InvalidRequest('convergent encryption requires derivation to be enabled, so context is required');
    p = await changePolicy(store, name, (current) => current ?? newPolicy({ name, type, derived: contextSet, convergent }, deps.now()));
    if (p === undefined) throw new InvalidRequest('encryption key not found');
  }
  const policy = p;
  return answerItems(items.map((item, i) => encryptItem(policy, item, i)), batch, { failedBatch: '400' });
}

function decryptItem(p: KeyPolicy, item: BatchItem, index: number): Outcome {
  const context = optionalB64(item, 'context');
  const associatedData = optionalB64(item, 'associated_data');
  if (associatedData !== undefined && !supports.associatedData(p.type)) return { error: `'[${index}].associated_data' provided for non-AEAD cipher suite ${p.type}` };
  return { plaintext: open(p, stringField(item, 'ciphertext'), context, associatedData).toString('base64') };
}

function rewrapItem(p: KeyPolicy, item: BatchItem): Outcome {
  const context = optionalB64(item, 'context');
  const plaintext = open(p, stringField(item, 'ciphertext'), context, undefined);
  const { ciphertext, version } = seal(p, { plaintext, version: intField(item, 'key_version'), context });
  return { ciphertext, key_version: version };
}

/** decrypt and rewrap: each item's `ciphertext` under the named key, one at a time. */
async function eachCiphertext(store: Store, name: string, data: Data, each: (p: KeyPolicy, item: BatchItem, index: number) => Outcome): Promise<LogicalResponse> {
  const batch = batchItems(data);
  if (batch === undefined && stringField(data, 'ciphertext') === '') throw new InvalidRequest('missing ciphertext to decrypt');
  const items: BatchItem[] = batch ?? [data];
  sameContext(items);
  const p = await requirePolicy(store, name, 'encryption key not found');
  const out = items.map((item, i) => {
    if (stringField(item, 'ciphertext') === '') return { error: 'missing ciphertext to decrypt' };
    try {
      return each(p, item, i);
    } catch (e) {
      return itemError(e);
    }
  });
  return answerItems(out, batch, { failedBatch: '400' });
}

export const decrypt = (store: Store, name: string, data: Data): Promise<LogicalResponse> => eachCiphertext(store, name, data, decryptItem);
export const rewrap = (store: Store, name: string, data: Data): Promise<LogicalResponse> => eachCiphertext(store, name, data, rewrapItem);

/** datakey/<plaintext|wrapped>/<name>: a new random key, encrypted by the named one. */
export async function datakey(store: Store, kind: string, name: string, data: Data): Promise<LogicalResponse> {
  if (kind !== 'plaintext' && kind !== 'wrapped') throw new InvalidRequest(`Invalid path, must be 'plaintext' or 'wrapped'`);
  const bits = intField(data, 'bits', 256);
  if (bits !== 128 && bits !== 256 && bits !== 512) throw new InvalidRequest('invalid bits value');
  const context = stringField(data, 'context') === '' ? undefined : strictBase64(stringField(data, 'context'));
  const associatedData = stringField(data, 'associated_data') === '' ? undefined : strictBase64(stringField(data, 'associated_data'));
  if (stringField(data, 'nonce') !== '') throw new InvalidRequest('nonce provided when not allowed');
  const p = await requirePolicy(store, name, 'encryption key not found');
  if (associatedData !== undefined && !supports.associatedData(p.type)) throw new InvalidRequest(`associated_data provided for non-AEAD cipher suite ${p.type}`);
  const key = randomBytes(bits / 8);
  const { ciphertext, version } = encryptValue(p, { plaintext: key, version: intField(data, 'key_version'), ...(context ? { context } : {}), ...(associatedData ? { associatedData } : {}) });
  return { data: { ciphertext, key_version: version, ...(kind === 'plaintext' ? { plaintext: key.toString('base64') } : {}) } };
}
