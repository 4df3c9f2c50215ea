/**
 * Transit backup and restore in Vault's format (keysutil Policy.Backup, LockManager.RestorePolicy):
 * base64 of the JSON `{"policy": <keysutil Policy>, "archived_keys": {"keys": [...]}}` with Go's
 * field names and encodings: the key type as keysutil's number, []byte as base64, times RFC 3339,
 * durations in nanoseconds, ECDSA and RSA private keys as Go's big integers (JSON numbers of any
 * length, kept exact here: never through a float). A backup made here restores into Vault and one
 * made by Vault restores here, for every type this engine has.
 *
 *   const blob = toBackup(policy, now);          // what backup/<name> answers
 *   const p = fromBackup(blob, 'name', now);     // what restore writes
 */
import { createPrivateKey, createPublicKey, randomBytes, type JsonWebKey } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import { KEY_TYPES, isAsymmetric, type KeyPolicy, type KeyType, type KeyVersion } from './policy.js';

/** keysutil's KeyType numbers. */
const TYPE_NUMBERS: Readonly<Record<KeyType, number>> = {
  'aes256-gcm96': 0,
  'ecdsa-p256': 1,
  ed25519: 2,
  'rsa-2048': 3,
  'rsa-4096': 4,
  'chacha20-poly1305': 5,
  'ecdsa-p384': 6,
  'ecdsa-p521': 7,
  'aes128-gcm96': 8,
  'rsa-3072': 9,
  hmac: 10,
};

/** Marks big integers in the JSON text; random so no string a client chose (a key name) can look like one. */
const MARK = randomBytes(12).toString('hex');

/** A big integer written into the JSON text as a bare number (Go's *big.Int marshalling). */
class BigNumber {
  constructor(readonly digits: string) {}
  toJSON(): string {
    return `${MARK}:${this.digits}`;
  }
}

const bigOf = (b64url: string | undefined): BigNumber => new BigNumber(BigInt(`0x${Buffer.from(b64url ?? '', 'base64url').toString('hex') || '0'}`).toString(10));

function b64urlOf(value: unknown, bytes?: number): string {
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new InvalidRequest('failed to restore the policy: a key number is malformed');
  let hex = BigInt(value).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  let buf = Buffer.from(hex, 'hex');
  if (bytes !== undefined && buf.length < bytes) buf = Buffer.concat([Buffer.alloc(bytes - buf.length), buf]);
  return buf.toString('base64url');
}

const CURVES: Partial<Record<KeyType, { crv: string; bytes: number }>> = {
  'ecdsa-p256': { crv: 'P-256', bytes: 32 },
  'ecdsa-p384': { crv: 'P-384', bytes: 48 },
  'ecdsa-p521': { crv: 'P-521', bytes: 66 },
};

/** One version as keysutil's KeyEntry. */
function entryOut(type: KeyType, v: KeyVersion): Record<string, unknown> {
  const e: Record<string, unknown> = {
    key: v.key ?? null,
    hmac_key: v.hmac_key,
    time: v.time,
    ec_x: null,
    ec_y: null,
    ec_d: null,
    rsa_key: null,
    rsa_public_key: null,
    public_key: v.public_key ?? '',
    convergent_version: v.convergent_version ?? 0,
    creation_time: v.creation_time,
    certificate_chain: null,
  };
  if (!isAsymmetric(type) || v.private_pkcs8 === undefined) return e;
  const jwk = createPrivateKey({ key: Buffer.from(v.private_pkcs8, 'base64'), format: 'der', type: 'pkcs8' }).export({ format: 'jwk' });
  if (type === 'ed25519') {
    e.key = Buffer.concat([Buffer.from(jwk.d ?? '', 'base64url'), Buffer.from(jwk.x ?? '', 'base64url')]).toString('base64');
  } else if (CURVES[type]) {
    Object.assign(e, { ec_x: bigOf(jwk.x), ec_y: bigOf(jwk.y), ec_d: bigOf(jwk.d) });
  } else {
    const pub = { N: bigOf(jwk.n), E: Number(BigInt(`0x${Buffer.from(jwk.e ?? '', 'base64url').toString('hex')}`)) };
    e.rsa_key = { ...pub, D: bigOf(jwk.d), Primes: [bigOf(jwk.p), bigOf(jwk.q)], Precomputed: { Dp: bigOf(jwk.dp), Dq: bigOf(jwk.dq), Qinv: bigOf(jwk.qi), CRTValues: [] } };
    e.rsa_public_key = pub;
  }
  return e;
}

/** backup/<name>: the blob, and the policy with its backup_info (Vault persists it). */
export function toBackup(p: KeyPolicy, now: Date): { blob: string; policy: KeyPolicy } {
  if (!p.exportable) throw new InvalidRequest('exporting is disallowed on the policy');
  if (!p.allow_plaintext_backup) throw new InvalidRequest('plaintext backup is disallowed on the policy');
  const policy: KeyPolicy = { ...p, backup_info: { time: now.toISOString(), version: p.latest_version } };
  const keys: Record<string, unknown> = {};
  for (const [n, v] of Object.entries(policy.keys)) keys[n] = entryOut(p.type, v);
  const archive: unknown[] = [entryOut(p.type, { hmac_key: '', time: '0001-01-01T00:00:00Z', creation_time: 0 })];
  for (let n = 1; n <= p.latest_version; n++) archive.push(policy.keys[String(n)] ? keys[String(n)] : entryOut(p.type, { hmac_key: '', time: '0001-01-01T00:00:00Z', creation_time: 0 }));
  const body = {
    policy: {
      name: p.name,
      keys,
      derived: p.derived,
      kdf: p.kdf,
      convergent_encryption: p.convergent_encryption,
      exportable: p.exportable,
      min_decryption_version: p.min_decryption_version,
      min_encryption_version: p.min_encryption_version,
      latest_version: p.latest_version,
      archive_version: p.latest_version,
      archive_min_version: p.min_available_version,
      min_available_version: p.min_available_version,
      deletion_allowed: p.deletion_allowed,
      convergent_version: p.convergent_version,
      type: TYPE_NUMBERS[p.type],
      backup_info: policy.backup_info,
      restore_info: p.restore_info ?? null,
      allow_plaintext_backup: p.allow_plaintext_backup,
      version_template: '',
      storage_prefix: '',
      auto_rotate_period: p.auto_rotate_period * 1e9,
      Imported: false,
      AllowImportedKeyRotation: false,
      ...(p.key_size !== undefined ? { key_size: p.key_size } : {}),
    },
    archived_keys: { keys: archive },
  };
  const json = JSON.stringify(body).replace(new RegExp(`"${MARK}:(\\d+)"`, 'g'), '$1');
  return { blob: Buffer.from(json, 'utf8').toString('base64'), policy };
}

type Json = Record<string, unknown>;

/** Parses Vault's JSON keeping every integer of 16 digits or more exact (as a string). */
function parseExact(text: string): Json {
  const quoted = text.replace(/("(?:[^"\\]|\\.)*")|(-?\d{16,})(?=\s*[,\]}])/g, (m, str: string | undefined, big: string | undefined) => (str !== undefined ? str : `"${big}"`));
  const v: unknown = JSON.parse(quoted);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
  return v as Json;
}

const num = (v: unknown): string => (typeof v === 'number' ? BigInt(v).toString(10) : String(v));

function entryIn(type: KeyType, e: Json): KeyVersion {
  const time = typeof e.time === 'string' ? e.time : new Date(Number(e.creation_time ?? 0) * 1000).toISOString();
  const base = {
    hmac_key: typeof e.hmac_key === 'string' ? e.hmac_key : '',
    time,
    creation_time: typeof e.creation_time === 'number' ? e.creation_time : Math.floor(Date.parse(time) / 1000),
    ...(typeof e.convergent_version === 'number' && e.convergent_version > 0 ? { convergent_version: e.convergent_version } : {}),
  };
  if (!isAsymmetric(type)) {
    if (typeof e.key !== 'string') throw new InvalidRequest('failed to restore the policy: a key version has no key');
    return { ...base, key: e.key };
  }
  let jwk: JsonWebKey;
  if (type === 'ed25519') {
    const raw = Buffer.from(typeof e.key === 'string' ? e.key : '', 'base64');
    if (raw.length !== 64) throw new InvalidRequest('failed to restore the policy: an ed25519 key is not 64 bytes');
    jwk = { kty: 'OKP', crv: 'Ed25519', d: raw.subarray(0, 32).toString('base64url'), x: raw.subarray(32).toString('base64url') };
  } else if (CURVES[type]) {
    const c = CURVES[type];
    jwk = { kty: 'EC', crv: c.crv, x: b64urlOf(num(e.ec_x), c.bytes), y: b64urlOf(num(e.ec_y), c.bytes), d: b64urlOf(num(e.ec_d), c.bytes) };
  } else {
    const r = e.rsa_key as Json | null;
    if (r === null || typeof r !== 'object') throw new InvalidRequest('failed to restore the policy: an RSA key version has no private key');
    const primes = Array.isArray(r.Primes) ? r.Primes.map(num) : [];
    const pre = (r.Precomputed ?? {}) as Json;
    jwk = {
      kty: 'RSA', n: b64urlOf(num(r.N)), e: b64urlOf(num(r.E)), d: b64urlOf(num(r.D)), p: b64urlOf(primes[0]), q: b64urlOf(primes[1]),
      dp: b64urlOf(num(pre.Dp)), dq: b64urlOf(num(pre.Dq)), qi: b64urlOf(num(pre.Qinv)),
    };
  }
  let key;
  try {
    key = createPrivateKey({ key: jwk, format: 'jwk' });
  } catch {
    throw new InvalidRequest('failed to restore the policy: a private key is malformed');
  }
  const pkcs8 = key.export({ format: 'der', type: 'pkcs8' }).toString('base64');
  const publicKey = type === 'ed25519'
    ? Buffer.from(jwk.x ?? '', 'base64url').toString('base64')
    : (createPublicKey(key).export({ format: 'pem', type: 'spki' }) as string);
  return { ...base, hmac_key: base.hmac_key, private_pkcs8: pkcs8, public_key: publicKey };
}

/** restore[/<name>]: the policy a blob holds, under `name` when given; InvalidRequest for a bad blob. */
export function fromBackup(blob: string, name: string | undefined, now: Date): KeyPolicy {
  let data: Json;
  try {
    data = parseExact(Buffer.from(blob, 'base64').toString('utf8'));
  } catch {
    throw new InvalidRequest('failed to restore the policy: the backup is not base64 of a JSON object');
  }
  const p = data.policy as Json | undefined;
  if (p === undefined || typeof p !== 'object' || p === null) throw new InvalidRequest('failed to restore the policy: the backup holds no policy');
  const type = (Object.entries(TYPE_NUMBERS).find(([, n]) => n === p.type)?.[0] ?? '') as KeyType;
  if (!(KEY_TYPES as readonly string[]).includes(type)) throw new InvalidRequest(`failed to restore the policy: key type ${String(p.type).slice(0, 16)} is not supported`);
  const keys: Record<string, KeyVersion> = {};
  const rawKeys = (p.keys ?? {}) as Record<string, Json>;
  for (const [n, e] of Object.entries(rawKeys)) {
    if (!/^\d+$/.test(n) || typeof e !== 'object' || e === null) throw new InvalidRequest('failed to restore the policy: a key version is malformed');
    keys[n] = entryIn(type, e);
  }
  const int = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) ? v : 0);
  const latest = int(p.latest_version);
  // Vault keeps versions below min_decryption_version in the archive only (indexed by version).
  const archive = ((data.archived_keys as Json | undefined)?.keys ?? []) as unknown[];
  const floor = Math.max(1, int(p.min_available_version));
  for (let n = floor; n <= latest && n < archive.length; n++) {
    const e = archive[n] as Json | null;
    const material = e !== null && typeof e === 'object' && (typeof e.key === 'string' || e.ec_d != null || e.rsa_key != null);
    if (keys[String(n)] === undefined && material) keys[String(n)] = entryIn(type, e);
  }
  if (latest < 1 || keys[String(latest)] === undefined) throw new InvalidRequest('failed to restore the policy: the latest key version is missing');
  const restoredName = name ?? (typeof p.name === 'string' ? p.name : '');
  return {
    name: restoredName,
    type,
    derived: p.derived === true,
    kdf: int(p.kdf),
    convergent_encryption: p.convergent_encryption === true,
    convergent_version: typeof p.convergent_version === 'number' ? p.convergent_version : 0,
    exportable: p.exportable === true,
    allow_plaintext_backup: p.allow_plaintext_backup === true,
    deletion_allowed: p.deletion_allowed === true,
    min_decryption_version: int(p.min_decryption_version) || 1,
    min_encryption_version: int(p.min_encryption_version),
    min_available_version: int(p.min_available_version),
    latest_version: latest,
    auto_rotate_period: Math.floor(Number(num(p.auto_rotate_period ?? 0)) / 1e9),
    ...(typeof p.key_size === 'number' && p.key_size > 0 ? { key_size: p.key_size } : type === 'hmac' ? { key_size: Buffer.from(keys[String(latest)]?.key ?? '', 'base64').length } : {}),
    keys,
    ...(p.backup_info && typeof p.backup_info === 'object' ? { backup_info: p.backup_info as { time: string; version: number } } : {}),
    restore_info: { time: now.toISOString(), version: latest },
  };
}
