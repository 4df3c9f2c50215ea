/**
 * A transit key ("policy" in Vault's keysutil): its versions and settings, as one JSON record at
 * `policy/<name>` in the mount's storage (behind the barrier like every value). Field names are
 * Vault's (keysutil/policy.go); a version's key material is base64, its asymmetric key PKCS#8.
 * Pure: every change returns a new record, the caller commits it.
 *
 *   let p = newPolicy({ name: 'app', type: 'aes256-gcm96' }, new Date());   // version 1
 *   p = rotate(p, new Date(), await newMaterial('ed25519'));              // an asymmetric version takes its pair
 *   const view = policyView(p);                                             // Vault's key read
 */
import { randomBytes } from 'node:crypto';
import { Internal, InvalidRequest } from '../../core/errors.js';
import { keyVersionName, type AsymmetricMaterial } from './asymmetric.js';

export const SYMMETRIC_TYPES = ['aes128-gcm96', 'aes256-gcm96', 'chacha20-poly1305'] as const;
export const SIGNING_TYPES = ['ed25519', 'ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048', 'rsa-3072', 'rsa-4096'] as const;
export const KEY_TYPES = [...SYMMETRIC_TYPES, ...SIGNING_TYPES, 'hmac'] as const;
export type KeyType = (typeof KEY_TYPES)[number];
export type SymmetricType = (typeof SYMMETRIC_TYPES)[number];

/** Keysutil's KDF numbers: 0 the legacy HMAC-SHA256 counter mode, 1 HKDF-SHA256 (every new key). */
export const KDF_HKDF_SHA256 = 1;
/** The convergent scheme every new convergent key version uses (nonce = HMAC of the plaintext). */
export const CONVERGENT_VERSION = 3;
export const HMAC_MIN_KEY_SIZE = 32;
export const HMAC_MAX_KEY_SIZE = 512;

export interface KeyVersion {
  /** Symmetric and HMAC keys; ed25519's 64-byte private key. Base64. */
  readonly key?: string;
  /** Every version's HMAC key (the key itself for type hmac). Base64. */
  readonly hmac_key: string;
  /** RFC 3339 creation time. */
  readonly time: string;
  /** Unix seconds, as Vault's deprecated field (symmetric reads show it). */
  readonly creation_time: number;
  /** ECDSA and RSA: the private key, PKCS#8 DER in base64. */
  readonly private_pkcs8?: string;
  /** Asymmetric types: what a key read shows. */
  readonly public_key?: string;
  readonly convergent_version?: number;
}

export interface KeyPolicy {
  readonly name: string;
  readonly type: KeyType;
  readonly derived: boolean;
  readonly kdf: number;
  readonly convergent_encryption: boolean;
  /** -1 when every version carries its own (Vault's marker). */
  readonly convergent_version: number;
  readonly exportable: boolean;
  readonly allow_plaintext_backup: boolean;
  readonly deletion_allowed: boolean;
  readonly min_decryption_version: number;
  readonly min_encryption_version: number;
  readonly min_available_version: number;
  readonly latest_version: number;
  /** Seconds; 0: never. */
  readonly auto_rotate_period: number;
  /** HMAC keys: bytes. */
  readonly key_size?: number;
  readonly keys: Readonly<Record<string, KeyVersion>>;
  readonly backup_info?: { readonly time: string; readonly version: number };
  readonly restore_info?: { readonly time: string; readonly version: number };
}

export interface NewPolicyInput {
  readonly name: string;
  readonly type: KeyType;
  readonly derived?: boolean;
  readonly convergent?: boolean;
  readonly exportable?: boolean;
  readonly allowPlaintextBackup?: boolean;
  readonly autoRotatePeriod?: number;
  readonly keySize?: number;
}

export const isSymmetric = (t: KeyType): t is SymmetricType => (SYMMETRIC_TYPES as readonly string[]).includes(t);
export type AsymmetricKeyType = (typeof SIGNING_TYPES)[number];

export const isAsymmetric = (t: KeyType): t is AsymmetricKeyType => (SIGNING_TYPES as readonly string[]).includes(t);
const isRsa = (t: KeyType): boolean => t.startsWith('rsa-');

/** Vault's KeyType methods. */
export const supports = {
  encryption: (t: KeyType): boolean => isSymmetric(t) || isRsa(t),
  decryption: (t: KeyType): boolean => isSymmetric(t) || isRsa(t),
  signing: (t: KeyType): boolean => isAsymmetric(t),
  derivation: (t: KeyType): boolean => isSymmetric(t) || t === 'ed25519',
  associatedData: (t: KeyType): boolean => isSymmetric(t),
};

/** The type named by a create request; InvalidRequest with Vault's text for any other. */
export function keyTypeOf(raw: string): KeyType {
  if ((KEY_TYPES as readonly string[]).includes(raw)) return raw as KeyType;
  throw new InvalidRequest(`unknown key type ${raw.slice(0, 64)}`);
}

/** Vault's checks on a new key's settings (path_keys.go, lock_manager.go), before anything is made. */
export function checkNewPolicy(i: NewPolicyInput): void {
  const derived = i.derived === true;
  const convergent = i.convergent === true;
  const period = i.autoRotatePeriod ?? 0;
  if (period !== 0 && period < 3600) throw new InvalidRequest('auto rotate period must be 0 to disable or at least an hour');
  if (!derived && convergent) throw new InvalidRequest('convergent encryption requires derivation to be enabled');
  if (i.keySize !== undefined && i.keySize !== 0) {
    if (i.type !== 'hmac') throw new InvalidRequest(`key_size is not valid for algorithm ${i.type}`);
    if (i.keySize < HMAC_MIN_KEY_SIZE || i.keySize > HMAC_MAX_KEY_SIZE) throw new InvalidRequest(`invalid key_size ${i.keySize}`);
  }
  if (i.type === 'ed25519' && convergent) throw new InvalidRequest(`convergent encryption not supported for keys of type ${i.type}`);
  if ((i.type.startsWith('ecdsa-') || isRsa(i.type) || i.type === 'hmac') && (derived || convergent)) {
    throw new InvalidRequest(`key derivation and convergent encryption not supported for keys of type ${i.type}`);
  }
}

const b64 = (b: Buffer): string => b.toString('base64');

/** An asymmetric version's key pair as asymmetric.ts uses it. */
export const materialOf = (v: KeyVersion): AsymmetricMaterial => ({ privatePkcs8: v.private_pkcs8 ?? '', publicKey: v.public_key ?? '' });

/**
 * A new version's material for the policy's type (keysutil RotateInMemory); an asymmetric type
 * takes the key pair made beforehand (`material`: RSA's generation runs off the event loop).
 */
function newVersion(p: Pick<KeyPolicy, 'type' | 'convergent_encryption' | 'convergent_version' | 'key_size'>, now: Date, material: AsymmetricMaterial | undefined): KeyVersion {
  const hmacKey = randomBytes(32);
  const base = { time: now.toISOString(), creation_time: Math.floor(now.getTime() / 1000) };
  const convergent = p.convergent_encryption && (p.convergent_version === -1 || p.convergent_version > 1) ? { convergent_version: CONVERGENT_VERSION } : {};
  if (p.type === 'hmac') {
    const key = randomBytes(p.key_size ?? 32);
    return { ...base, key: b64(key), hmac_key: b64(key) };
  }
  if (isSymmetric(p.type)) return { ...base, key: b64(randomBytes(p.type === 'aes128-gcm96' ? 16 : 32)), hmac_key: b64(hmacKey), ...convergent };
  if (material === undefined) throw new Internal(`a ${p.type} version needs its key pair`);
  return { ...base, hmac_key: b64(hmacKey), private_pkcs8: material.privatePkcs8, public_key: material.publicKey };
}

export function newPolicy(i: NewPolicyInput, now: Date, material?: AsymmetricMaterial): KeyPolicy {
  checkNewPolicy(i);
  const derived = i.derived === true;
  const convergent = derived && i.convergent === true;
  const draft: KeyPolicy = {
    name: i.name,
    type: i.type,
    derived,
    kdf: derived ? KDF_HKDF_SHA256 : 0,
    convergent_encryption: convergent,
    convergent_version: convergent ? -1 : 0,
    exportable: i.exportable === true,
    allow_plaintext_backup: i.allowPlaintextBackup === true,
    deletion_allowed: false,
    min_decryption_version: 1,
    min_encryption_version: 0,
    min_available_version: 0,
    latest_version: 0,
    auto_rotate_period: i.autoRotatePeriod ?? 0,
    ...(i.type === 'hmac' ? { key_size: i.keySize || 32 } : {}),
    keys: {},
  };
  return rotate(draft, now, material);
}

/** A new latest version (`material`: its key pair, for an asymmetric type). */
export function rotate(p: KeyPolicy, now: Date, material?: AsymmetricMaterial): KeyPolicy {
  const latest = p.latest_version + 1;
  return { ...p, latest_version: latest, min_decryption_version: p.min_decryption_version || 1, keys: { ...p.keys, [String(latest)]: newVersion(p, now, material) } };
}

/** Whether the key's auto_rotate_period has passed since its latest version was made (Vault's periodic check). */
export function rotationDue(p: KeyPolicy, now: Date): boolean {
  if (p.auto_rotate_period <= 0) return false;
  const latest = p.keys[String(p.latest_version)];
  if (latest === undefined) return false;
  return now.getTime() >= Date.parse(latest.time) + p.auto_rotate_period * 1000;
}

/** The version an operation names (0: the latest), as Vault checks it for encryption. */
export function encryptionVersion(p: KeyPolicy, asked: number): number {
  if (asked === 0) return p.latest_version;
  if (asked < 0) throw new InvalidRequest('requested version for encryption is negative');
  if (asked > p.latest_version) throw new InvalidRequest('requested version for encryption is higher than the latest key version');
  if (asked < p.min_encryption_version) throw new InvalidRequest('requested version for encryption is less than the minimum encryption key version');
  return asked;
}

/** A version's entry; InvalidRequest "no such key version" when it was trimmed or never existed. */
export function versionOf(p: KeyPolicy, version: number): KeyVersion {
  const v = p.keys[String(version)];
  if (v === undefined) throw new InvalidRequest('no such key version');
  return v;
}

export interface ConfigInput {
  readonly min_decryption_version?: number;
  readonly min_encryption_version?: number;
  readonly deletion_allowed?: boolean;
  readonly exportable?: boolean;
  readonly allow_plaintext_backup?: boolean;
  readonly auto_rotate_period?: number;
}

/** keys/<name>/config (path_keys_config.go): the new policy, or InvalidRequest with Vault's text. `warnings` collects Vault's. */
export function configure(p: KeyPolicy, c: ConfigInput, warnings: string[]): KeyPolicy {
  let minDec = p.min_decryption_version;
  let minEnc = p.min_encryption_version;
  if (c.min_decryption_version !== undefined) {
    let v = c.min_decryption_version;
    if (v < 0) throw new InvalidRequest('min decryption version cannot be negative');
    if (v === 0) {
      v = 1;
      warnings.push('since Vault 0.3, transit key numbering starts at 1; forcing minimum to 1');
    }
    if (v !== minDec) {
      if (v > p.latest_version) throw new InvalidRequest(`cannot set min decryption version of ${v}, latest key version is ${p.latest_version}`);
      minDec = v;
    }
  }
  if (c.min_encryption_version !== undefined) {
    const v = c.min_encryption_version;
    if (v < 0) throw new InvalidRequest('min encryption version cannot be negative');
    if (v !== minEnc) {
      if (v > p.latest_version) throw new InvalidRequest(`cannot set min encryption version of ${v}, latest key version is ${p.latest_version}`);
      minEnc = v;
    }
  }
  if (minEnc > 0 && minEnc < minDec) {
    throw new InvalidRequest(`cannot set min encryption/decryption values; min encryption version of ${minEnc} must be greater than or equal to min decryption version of ${minDec}`);
  }
  const period = c.auto_rotate_period ?? p.auto_rotate_period;
  if (period !== 0 && period < 3600) throw new InvalidRequest('auto rotate period must be 0 to disable or at least an hour');
  const next: KeyPolicy = {
    ...p,
    min_decryption_version: minDec || 1,
    min_encryption_version: minEnc,
    deletion_allowed: c.deletion_allowed ?? p.deletion_allowed,
    // Once on, never off again (Vault ignores a false).
    exportable: p.exportable || c.exportable === true,
    allow_plaintext_backup: p.allow_plaintext_backup || c.allow_plaintext_backup === true,
    auto_rotate_period: period,
  };
  if (next.min_available_version > next.min_encryption_version && next.min_encryption_version !== p.min_encryption_version) {
    throw new InvalidRequest('min encryption version should not be less than min available version');
  }
  if (next.min_available_version > next.min_decryption_version) throw new InvalidRequest('min decryption version should not be less then min available version');
  return next;
}

/** keys/<name>/trim (path_trim.go): versions below `min` are deleted for good. */
export function trim(p: KeyPolicy, min: number | undefined): KeyPolicy {
  if (min === undefined) throw new InvalidRequest('missing min_available_version');
  if (min < p.min_available_version) throw new InvalidRequest('minimum available version cannot be decremented');
  if (p.min_encryption_version === 0) throw new InvalidRequest('minimum available version cannot be set when minimum encryption version is not set');
  if (p.min_decryption_version === 0) throw new InvalidRequest('minimum available version cannot be set when minimum decryption version is not set');
  if (min > p.min_encryption_version) throw new InvalidRequest('minimum available version cannot be greater than minmum encryption version');
  if (min > p.min_decryption_version) throw new InvalidRequest('minimum available version cannot be greater than minimum decryption version');
  if (min < 0) throw new InvalidRequest('minimum available version cannot be negative');
  if (min === 0) throw new InvalidRequest('minimum available version should be positive');
  const keys: Record<string, KeyVersion> = {};
  for (const [v, e] of Object.entries(p.keys)) if (Number(v) >= min) keys[v] = e;
  return { ...p, min_available_version: min, keys };
}

/** Vault's key read (path_keys.go formatKeyPolicy). `publicOf` gives a derived ed25519 version's public key for a context. */
export function policyView(p: KeyPolicy, publicOf?: (version: number) => string): Record<string, unknown> {
  const keys: Record<string, unknown> = {};
  for (const [v, e] of Object.entries(p.keys)) {
    if (!isAsymmetric(p.type)) keys[v] = e.creation_time;
    else {
      let publicKey = e.public_key ?? '';
      if (p.type === 'ed25519' && p.derived) publicKey = publicOf ? publicOf(Number(v)) : '';
      keys[v] = { name: keyVersionName(p.type), public_key: publicKey, certificate_chain: '', creation_time: e.time };
    }
  }
  return {
    name: p.name,
    type: p.type,
    derived: p.derived,
    deletion_allowed: p.deletion_allowed,
    min_available_version: p.min_available_version,
    min_decryption_version: p.min_decryption_version,
    min_encryption_version: p.min_encryption_version,
    latest_version: p.latest_version,
    exportable: p.exportable,
    allow_plaintext_backup: p.allow_plaintext_backup,
    supports_encryption: supports.encryption(p.type),
    supports_decryption: supports.decryption(p.type),
    supports_signing: supports.signing(p.type),
    supports_derivation: supports.derivation(p.type),
    auto_rotate_period: p.auto_rotate_period,
    imported_key: false,
    keys,
    ...(p.key_size !== undefined ? { key_size: p.key_size } : {}),
    ...(p.backup_info ? { backup_info: p.backup_info } : {}),
    ...(p.restore_info ? { restore_info: p.restore_info } : {}),
    ...(p.derived
      ? { kdf: 'hkdf_sha256', convergent_encryption: p.convergent_encryption, ...(p.convergent_encryption ? { convergent_encryption_version: p.convergent_version } : {}) }
      : {}),
  };
}
