/**
 * sign and verify (Vault's path_sign_verify.go): signatures under an asymmetric key's version,
 * `vault:v<N>:` + the signature as asymmetric.ts encodes it; single or `batch_input`. verify
 * decides between a signature and an HMAC as Vault does (tool-paths.ts verifies HMACs).
 *
 *   await signData(store, 'signer', { input: 'aGk=' }, undefined);   // { signature: 'vault:v1:...', key_version: 1 }
 */
import { InvalidRequest } from '../../core/errors.js';
import type { Store } from '../../storage/store.js';
import type { LogicalResponse } from '../logical.js';
import { deriveEd25519, sign, verify, type AsymmetricMaterial, type AsymmetricType, type SignOptions } from './asymmetric.js';
import { answerItems, decodeInput, itemError, splitVersioned, versioned, type Outcome } from './batch.js';
import { batchItems, boolField, intField, stringField, strictBase64, type BatchItem } from './fields.js';
import { requirePolicy } from './keys-store.js';
import { isAsymmetric, materialOf, versionOf, type KeyPolicy } from './policy.js';
import { HASHES, verifyHmac } from './tool-paths.js';

type Data = Readonly<Record<string, unknown>>;

/** Vault's hash names for signatures: the HMAC ones, and `none` (prehashed PKCS#1 v1.5). */
const HASH_NAMES: readonly string[] = ['none', ...Object.keys(HASHES)];

/** The request's signing options, checked as Vault checks them before the key is looked up. */
function optionsOf(data: Data, urlAlgorithm: string | undefined): SignOptions {
  const hashAlgorithm = urlAlgorithm || stringField(data, 'hash_algorithm') || stringField(data, 'algorithm') || 'sha2-256';
  if (!HASH_NAMES.includes(hashAlgorithm)) throw new InvalidRequest(`invalid hash algorithm "${hashAlgorithm.slice(0, 32)}"`);
  const marshalingAlgorithm = stringField(data, 'marshaling_algorithm', 'asn1');
  if (marshalingAlgorithm !== 'asn1' && marshalingAlgorithm !== 'jws') throw new InvalidRequest(`invalid marshaling type "${marshalingAlgorithm.slice(0, 32)}"`);
  const prehashed = boolField(data, 'prehashed') === true;
  const signatureAlgorithm = stringField(data, 'signature_algorithm');
  const salt = data.salt_length;
  if (hashAlgorithm === 'none' && (!prehashed || signatureAlgorithm !== 'pkcs1v15')) {
    throw new InvalidRequest('hash_algorithm=none requires both prehashed=true and signature_algorithm=pkcs1v15');
  }
  return {
    hashAlgorithm,
    marshalingAlgorithm,
    prehashed,
    ...(signatureAlgorithm !== '' ? { signatureAlgorithm } : {}),
    ...(salt !== undefined && salt !== null ? { saltLength: typeof salt === 'number' ? salt : String(salt) } : {}),
  };
}

async function signingKey(store: Store, name: string, missing: string, unsupported: string): Promise<Readonly<KeyPolicy>> {
  const p = await requirePolicy(store, name, missing);
  if (!isAsymmetric(p.type)) throw new InvalidRequest(`key type ${p.type} does not support ${unsupported}`);
  return p;
}

/** The material a version signs with: the stored pair, or the derived ed25519 one for the item's context. */
function materialFor(p: KeyPolicy, version: number, context: Buffer | undefined): AsymmetricMaterial {
  const m = materialOf(versionOf(p, version));
  if (!p.derived) return m;
  if (context === undefined || context.length === 0) {
    throw new InvalidRequest("missing 'context' for key derivation; the key was created using a derived key, which means additional, per-request information must be included in order to perform operations with the key");
  }
  return deriveEd25519(m, context);
}

function contextOf(item: BatchItem): Buffer | undefined | { error: string } {
  const raw = stringField(item, 'context');
  if (raw === '') return undefined;
  try {
    return strictBase64(raw);
  } catch {
    return { error: 'failed to base64-decode context' };
  }
}

/** sign/<name>[/<hash>]. */
export async function signData(store: Store, name: string, data: Data, urlAlgorithm: string | undefined): Promise<LogicalResponse> {
  const o = optionsOf(data, urlAlgorithm);
  const p = await signingKey(store, name, 'signing key not found', 'signing');
  let version = intField(data, 'key_version');
  if (version === 0) version = p.latest_version;
  else if (version < 0) throw new InvalidRequest('requested version for signing is negative');
  else if (version > p.latest_version) throw new InvalidRequest('requested version for signing is higher than the latest key version');
  else if (p.min_encryption_version > 0 && version < p.min_encryption_version) throw new InvalidRequest('requested version for signing is less than the minimum encryption key version');
  const batch = batchItems(data);
  const out = (batch ?? [data]).map((item): Outcome => {
    const input = decodeInput(item, 'missing input', true);
    if (!Buffer.isBuffer(input)) return input;
    const context = contextOf(item);
    if (context !== undefined && !Buffer.isBuffer(context)) return context;
    try {
      const m = materialFor(p, version, context);
      return { signature: versioned(version, sign(p.type as AsymmetricType, m, input, o)), key_version: version, ...(p.derived ? { public_key: m.publicKey } : {}) };
    } catch (e) {
      return itemError(e);
    }
  });
  return answerItems(out, batch, { failedBatch: 'ok' });
}

function verifyOne(p: KeyPolicy, o: SignOptions, item: BatchItem): Outcome {
  const input = decodeInput(item, 'missing input', true);
  if (!Buffer.isBuffer(input)) return input;
  const signature = item.signature;
  if (typeof signature !== 'string') return { error: 'missing signature' };
  const context = contextOf(item);
  if (context !== undefined && !Buffer.isBuffer(context)) return context;
  try {
    const split = splitVersioned(signature, 'signature');
    const version = split.version === 0 ? 1 : split.version;
    if (version > p.latest_version) throw new InvalidRequest('invalid signature: version is too new');
    if (p.min_decryption_version > 0 && version < p.min_decryption_version) throw new InvalidRequest('ciphertext or signature version is disallowed by policy (too old)');
    return { valid: verify(p.type as AsymmetricType, materialFor(p, version, context), input, split.rest, o) };
  } catch (e) {
    return itemError(e);
  }
}

/** verify/<name>[/<hash>]: a signature, or an HMAC (Vault's rules for which, and for batches mixing them). */
export async function verifyData(store: Store, name: string, data: Data, urlAlgorithm: string | undefined): Promise<LogicalResponse> {
  const batch = batchItems(data);
  const items = batch ?? [data];
  const has = (k: string) => (i: BatchItem) => i[k] !== undefined && i[k] !== null;
  const sigFound = items.some(has('signature'));
  const hmacFound = items.some(has('hmac'));
  const missing = items.some((i) => !has('signature')(i) && !has('hmac')(i));
  if (batch === undefined && sigFound && hmacFound) throw new InvalidRequest("provide one of 'signature' or 'hmac'");
  if (batch === undefined && !sigFound && !hmacFound) throw new InvalidRequest("neither a 'signature' nor an 'hmac' were given to verify");
  if (sigFound && hmacFound) throw new InvalidRequest("elements of batch_input must all provide 'signature' or all provide 'hmac'");
  if (missing && sigFound) throw new InvalidRequest("some elements of batch_input are missing 'signature'");
  if (missing && hmacFound) throw new InvalidRequest("some elements of batch_input are missing 'hmac'");
  if (missing) throw new InvalidRequest("no batch_input elements have 'signature' or 'hmac'");
  if (hmacFound) return verifyHmac(store, name, data, urlAlgorithm);
  const o = optionsOf(data, urlAlgorithm);
  const p = await signingKey(store, name, 'signature verification key not found', 'verification');
  return answerItems(items.map((item) => verifyOne(p, o, item)), batch, { failedBatch: 'ok' });
}
