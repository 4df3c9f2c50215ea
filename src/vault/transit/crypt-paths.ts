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
import { InvalidRequest, InvalidRequestWithData } from '../../core/errors.js';
import type { Store } from '../../storage/store.js';
import type { LogicalResponse } from '../logical.js';
import { batchItems, boolField, intField, stringField, type BatchItem } from './fields.js';
import { changePolicy, loadPolicy } from './keys-store.js';
import { encryptionVersion, isAsymmetric, isSymmetric, keyTypeOf, newPolicy, supports, type AsymmetricGenerator, type AsymmetricKeyType, type KeyPolicy, type KeyType } from './policy.js';
import { rsaDecrypt, rsaEncrypt } from './asymmetric.js';
import { decryptValue, encryptValue, parseCiphertext, strictBase64 } from './symmetric.js';

export interface CryptDeps {
  readonly now: () => Date;
  /** A new asymmetric version's key pair (RSA's generation runs off the event loop). */
  readonly generate: (type: AsymmetricKeyType) => Promise<{ readonly privatePkcs8: string; readonly publicKey: string }>;
}

/**
 * The generator a policy change under its key's lock calls: for an asymmetric type the key pair
 * is made before the lock is taken (RSA takes up to seconds), and handed over once.
 */
export async function pregenerated(type: KeyType, deps: CryptDeps): Promise<AsymmetricGenerator> {
  if (!isAsymmetric(type)) return () => {
    throw new InvalidRequest(`key type ${type} has no key pair`);
  };
  const made = await deps.generate(type);
  return () => made;
}

type Data = Readonly<Record<string, unknown>>;

/** One item's outcome: its fields, or its error. */
type Outcome = Record<string, unknown> | { error: string };

const failed = (o: Outcome): o is { error: string } => 'error' in o && typeof o.error === 'string';

function itemError(e: unknown): { error: string } {
  if (e instanceof InvalidRequest) return { error: e.messages.join('; ') };
  throw e;
}

/** Decodes an item's optional base64 field (context, associated_data). */
function optionalB64(item: BatchItem, name: string): Buffer | undefined {
  const v = stringField(item, name);
  return v === '' ? undefined : strictBase64(v);
}

/** Single or batch answer, as Vault's batchRequestResponse. */
function answer(items: Outcome[], batch: BatchItem[] | undefined, single: (o: Record<string, unknown>) => Record<string, unknown>): LogicalResponse {
  if (batch === undefined) {
    const only = items[0] as Outcome;
    if (failed(only)) throw new InvalidRequest(only.error);
    return { data: single(only) };
  }
  const results = items.map((o, i) => ({ ...o, reference: stringField(batch[i] ?? {}, 'reference') }));
  if (items.some(failed)) throw new InvalidRequestWithData('a batch item failed', { batch_results: results });
  return { data: { batch_results: results } };
}

/** Every item sets `context` or none does (Vault's rule, before anything is looked up). */
function sameContext(items: readonly BatchItem[]): boolean {
  const set = stringField(items[0] ?? {}, 'context') !== '';
  for (const i of items) if ((stringField(i, 'context') !== '') !== set) throw new InvalidRequest('context should be set either in all the request blocks or in none');
  return set;
}

async function existing(store: Store, name: string): Promise<Readonly<KeyPolicy>> {
  const p = await loadPolicy(store, name);
  if (p === undefined) throw new InvalidRequest('encryption key not found');
  return p;
}

const rsaMaterial = (p: KeyPolicy, version: number) => {
  const v = p.keys[String(version)];
  if (v === undefined) throw new InvalidRequest('no such key version');
  return { privatePkcs8: v.private_pkcs8 ?? '', publicKey: v.public_key ?? '' };
};

/** RSA keys encrypt with OAEP SHA-256 (keysutil): the same `vault:v<N>:` prefix over the raw ciphertext. */
function rsaEncryptItem(p: KeyPolicy, plaintext: Buffer, asked: number): Outcome {
  const version = encryptionVersion(p, asked);
  return { ciphertext: `vault:v${version}:${rsaEncrypt(rsaMaterial(p, version), plaintext).toString('base64')}`, key_version: version };
}

function rsaDecryptValue(p: KeyPolicy, ciphertext: string): Buffer {
  const { version, data } = parseCiphertext(p, ciphertext);
  let raw: Buffer;
  try {
    raw = strictBase64(data);
  } catch {
    throw new InvalidRequest('invalid ciphertext: could not decode base64');
  }
  return rsaDecrypt(rsaMaterial(p, version), raw);
}

function encryptItem(p: KeyPolicy, item: BatchItem, index: number): Outcome {
  try {
    const plaintext = strictBase64(stringField(item, 'plaintext'));
    const context = optionalB64(item, 'context');
    const associatedData = optionalB64(item, 'associated_data');
    if (associatedData !== undefined && !supports.associatedData(p.type)) return { error: `'[${index}].associated_data' provided for non-AEAD cipher suite ${p.type}` };
    if (p.type.startsWith('rsa-')) return rsaEncryptItem(p, plaintext, intField(item, 'key_version'));
    const { ciphertext, version } = encryptValue(p, { plaintext, version: intField(item, 'key_version'), ...(context ? { context } : {}), ...(associatedData ? { associatedData } : {}) });
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
    p = await changePolicy(store, name, (current) => current ?? newPolicy({ name, type, derived: contextSet, convergent }, deps.now(), () => {
      throw new InvalidRequest(`key type ${type} not supported for this operation`);
    }));
    if (p === undefined) throw new InvalidRequest('encryption key not found');
  }
  const policy = p;
  return answer(items.map((item, i) => encryptItem(policy, item, i)), batch, (o) => o);
}

function decryptItem(p: KeyPolicy, item: BatchItem, index: number): Outcome {
  try {
    const ciphertext = stringField(item, 'ciphertext');
    if (ciphertext === '') return { error: 'missing ciphertext to decrypt' };
    const context = optionalB64(item, 'context');
    const associatedData = optionalB64(item, 'associated_data');
    if (associatedData !== undefined && !supports.associatedData(p.type)) return { error: `'[${index}].associated_data' provided for non-AEAD cipher suite ${p.type}` };
    if (p.type.startsWith('rsa-')) return { plaintext: rsaDecryptValue(p, ciphertext).toString('base64') };
    const { plaintext } = decryptValue(p, { ciphertext, ...(context ? { context } : {}), ...(associatedData ? { associatedData } : {}) });
    return { plaintext: plaintext.toString('base64') };
  } catch (e) {
    return itemError(e);
  }
}

export async function decrypt(store: Store, name: string, data: Data): Promise<LogicalResponse> {
  const batch = batchItems(data);
  if (batch === undefined && stringField(data, 'ciphertext') === '') throw new InvalidRequest('missing ciphertext to decrypt');
  const items: BatchItem[] = batch ?? [data];
  sameContext(items);
  const p = await existing(store, name);
  return answer(items.map((item, i) => decryptItem(p, item, i)), batch, (o) => o);
}

function rewrapItem(p: KeyPolicy, item: BatchItem): Outcome {
  try {
    const ciphertext = stringField(item, 'ciphertext');
    if (ciphertext === '') return { error: 'missing ciphertext to decrypt' };
    if (p.type.startsWith('rsa-')) return rsaEncryptItem(p, rsaDecryptValue(p, ciphertext), intField(item, 'key_version'));
    const context = optionalB64(item, 'context');
    const { plaintext } = decryptValue(p, { ciphertext, ...(context ? { context } : {}) });
    const { ciphertext: next, version } = encryptValue(p, { plaintext, version: intField(item, 'key_version'), ...(context ? { context } : {}) });
    return { ciphertext: next, key_version: version };
  } catch (e) {
    return itemError(e);
  }
}

export async function rewrap(store: Store, name: string, data: Data): Promise<LogicalResponse> {
  const batch = batchItems(data);
  if (batch === undefined && stringField(data, 'ciphertext') === '') throw new InvalidRequest('missing ciphertext to decrypt');
  const items: BatchItem[] = batch ?? [data];
  sameContext(items);
  const p = await existing(store, name);
  return answer(items.map((item) => rewrapItem(p, item)), batch, (o) => o);
}

/** datakey/<plaintext|wrapped>/<name>: a new random key, encrypted by the named one. */
export async function datakey(store: Store, kind: string, name: string, data: Data): Promise<LogicalResponse> {
  if (kind !== 'plaintext' && kind !== 'wrapped') throw new InvalidRequest(`Invalid path, must be 'plaintext' or 'wrapped'`);
  const bits = intField(data, 'bits', 256);
  if (bits !== 128 && bits !== 256 && bits !== 512) throw new InvalidRequest('invalid bits value');
  const context = stringField(data, 'context') === '' ? undefined : strictBase64(stringField(data, 'context'));
  const associatedData = stringField(data, 'associated_data') === '' ? undefined : strictBase64(stringField(data, 'associated_data'));
  if (stringField(data, 'nonce') !== '') throw new InvalidRequest('nonce provided when not allowed');
  const p = await existing(store, name);
  if (associatedData !== undefined && !supports.associatedData(p.type)) throw new InvalidRequest(`associated_data provided for non-AEAD cipher suite ${p.type}`);
  const key = randomBytes(bits / 8);
  const { ciphertext, version } = encryptValue(p, { plaintext: key, version: intField(data, 'key_version'), ...(context ? { context } : {}), ...(associatedData ? { associatedData } : {}) });
  return { data: { ciphertext, key_version: version, ...(kind === 'plaintext' ? { plaintext: key.toString('base64') } : {}) } };
}
