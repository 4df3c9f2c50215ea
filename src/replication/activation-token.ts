/**
 * The cryptography of secondary activation tokens (WIRE.md section 4): the ES512 (P-521) JWT a
 * primary puts in `wrap_info.token`, and the X25519 sealed box it uses instead when the secondary
 * sent a `secondary_public_key`.
 *
 *   const key = await createSigningKey();                       // persist key.privateJwk
 *   const jwt = await signActivationJwt({ jti, addr, accessor, ttlSeconds: 1800, now }, key.privateJwk);
 *   peekJwt(jwt).addr;                                          // what a secondary reads, unverified
 *   const claims = await verifyActivationJwt(jwt, key.publicJwk, now);  // ActivationTokenRejected
 *
 *   const pair = generateBoxKeyPair();                          // secondary keeps pair.secretKey
 *   const b64 = sealTo(pair.publicKeyB64, bundleBytes);         // on the primary
 *   const bundle = openSealed(b64, pair);                       // on the secondary
 */
import type { Kind } from '../core/replication/index.js';
import {
  SignJWT,
  decodeJwt,
  decodeProtectedHeader,
  errors as jose,
  exportJWK,
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  importPKCS8,
  importSPKI,
  jwtVerify,
  type CryptoKey,
  type JWK,
  type KeyObject,
} from 'jose';
import nacl from 'tweetnacl';
import sealedBox from 'tweetnacl-sealedbox-js';
import { ErrorCode, InvalidRequest, TesseraError } from '../core/errors.js';

export const ALGORITHM = 'ES512';
/** The `type` claim of a wrapping token, as Vault writes it. */
export const WRAPPING_TYPE = 'wrapping';

export const RejectReason = {
  /** Not a compact JWT, or its claims are missing or of the wrong type. */
  malformed: 'malformed',
  /** Signed by another key, with another algorithm, or altered. */
  signature: 'signature',
  expired: 'expired',
  notYetValid: 'not-yet-valid',
  /** A JWT whose `type` claim is not "wrapping". */
  wrongType: 'wrong-type',
  /** A sealed box that does not open with this key pair (another key, or altered bytes). */
  sealedBox: 'sealed-box',
} as const;
export type RejectReason = (typeof RejectReason)[keyof typeof RejectReason];

/** An activation token that cannot be used; a 400 at the HTTP boundary, as Vault's unwrap. */
export class ActivationTokenRejected extends TesseraError {
  readonly reason: RejectReason;
  constructor(reason: RejectReason, message: string, options?: { cause?: unknown }) {
    super(ErrorCode.invalidRequest, message, options);
    this.reason = reason;
  }
}

export interface SigningKey {
  readonly privateJwk: JWK;
  readonly publicJwk: JWK;
  /** PKCS#8. */
  readonly privatePem: string;
  /** SPKI. */
  readonly publicPem: string;
}

/** A key as stored (JWK, or PEM: PKCS#8 private, SPKI public) or already imported. */
export type KeyInput = JWK | string | CryptoKey | KeyObject;

export interface ActivationClaims {
  /** The single-use wrapping token. */
  readonly jti: string;
  readonly iat: number;
  readonly nbf: number;
  readonly exp: number;
  readonly type: typeof WRAPPING_TYPE;
  /** The primary's API address. */
  readonly addr: string;
  readonly accessor: string;
  /** The replication set that issued it (our addition): lets a secondary refuse a token of another set before spending it. */
  readonly cluster_id?: string;
  /** The kind of replication it activates (our addition): checked before the token is spent. */
  readonly kind?: string;
}

export interface ActivationJwtRequest {
  readonly jti: string;
  readonly addr: string;
  readonly accessor: string;
  readonly ttlSeconds: number;
  readonly now: Date;
  readonly clusterId?: string;
  readonly kind?: Kind;
}

/** A fresh P-521 key pair in both stored forms. */
export async function createSigningKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(ALGORITHM, { extractable: true });
  return {
    privateJwk: await exportJWK(privateKey),
    publicJwk: await exportJWK(publicKey),
    privatePem: await exportPKCS8(privateKey),
    publicPem: await exportSPKI(publicKey),
  };
}

/** A compact JWS with the claims of WIRE.md section 4; nbf = iat = `now` in whole seconds. */
export async function signActivationJwt(request: ActivationJwtRequest, privateKey: KeyInput): Promise<string> {
  if (!Number.isInteger(request.ttlSeconds) || request.ttlSeconds <= 0) {
    throw new InvalidRequest('activation token ttl must be a positive whole number of seconds');
  }
  const iat = Math.floor(request.now.getTime() / 1000);
  const extra = {
    ...(request.clusterId !== undefined ? { cluster_id: request.clusterId } : {}),
    ...(request.kind !== undefined ? { kind: request.kind } : {}),
  };
  return new SignJWT({ type: WRAPPING_TYPE, addr: request.addr, accessor: request.accessor, ...extra })
    .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
    .setJti(request.jti)
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(iat + request.ttlSeconds)
    .sign(await importKey(privateKey, 'private'));
}

/** The claims of a JWT signed by the key pair of `publicKey`, valid at `now`; else ActivationTokenRejected. */
export async function verifyActivationJwt(jwt: string, publicKey: KeyInput, now: Date): Promise<ActivationClaims> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(jwt, await importKey(publicKey, 'public'), {
      algorithms: [ALGORITHM],
      currentDate: now,
      requiredClaims: ['jti', 'iat', 'nbf', 'exp'],
    }));
  } catch (e) {
    throw rejection(e);
  }
  const claims = activationClaims(payload);
  if (claims === undefined) throw new ActivationTokenRejected(RejectReason.malformed, 'activation token claims are malformed');
  if (claims.type !== WRAPPING_TYPE) {
    throw new ActivationTokenRejected(RejectReason.wrongType, `activation token has type "${String(claims.type).slice(0, 40)}", expected "${WRAPPING_TYPE}"`);
  }
  return claims as ActivationClaims;
}

/**
 * The claims without checking the signature or the times, as a secondary reads `addr` before it
 * calls the primary. Claims of the wrong type are left out. Never trust the result.
 */
export function peekJwt(jwt: string): Partial<ActivationClaims> {
  let payload: Record<string, unknown>;
  try {
    payload = decodeJwt(jwt);
  } catch (cause) {
    throw new ActivationTokenRejected(RejectReason.malformed, 'activation token is not a JWT', { cause });
  }
  const out: Record<string, unknown> = {};
  for (const name of ['jti', 'addr', 'accessor', 'type', 'cluster_id', 'kind'] as const) {
    if (typeof payload[name] === 'string') out[name] = payload[name];
  }
  for (const name of ['iat', 'nbf', 'exp'] as const) {
    if (typeof payload[name] === 'number') out[name] = payload[name];
  }
  return out as Partial<ActivationClaims>;
}

/** True for a compact JWS (three base64url parts with a JSON header naming an algorithm). */
export function isJwt(s: string): boolean {
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(s)) return false;
  try {
    return typeof decodeProtectedHeader(s).alg === 'string';
  } catch {
    return false;
  }
}

export interface BoxKeyPair {
  /** What the secondary hands out as `secondary_public_key`. */
  readonly publicKeyB64: string;
  readonly secretKey: Uint8Array;
}

export function generateBoxKeyPair(): BoxKeyPair {
  const pair = nacl.box.keyPair();
  return { publicKeyB64: Buffer.from(pair.publicKey).toString('base64'), secretKey: pair.secretKey };
}

/** True when `publicKeyB64` is base64 of an X25519 public key, so `sealTo` will accept it. */
export function isBoxPublicKey(publicKeyB64: string): boolean {
  return decodeBoxKey(publicKeyB64) !== undefined;
}

/** base64 of a sealed box of `bytes` to the X25519 public key; InvalidRequest for a bad key. */
export function sealTo(publicKeyB64: string, bytes: Uint8Array): string {
  const publicKey = decodeBoxKey(publicKeyB64);
  if (publicKey === undefined) {
    throw new InvalidRequest(`secondary_public_key must be base64 of a ${nacl.box.publicKeyLength}-byte X25519 public key`);
  }
  return Buffer.from(sealedBox.seal(bytes, publicKey)).toString('base64');
}

/** The bytes sealed to `keyPair`; ActivationTokenRejected when they were not, or were altered. */
export function openSealed(b64: string, keyPair: BoxKeyPair): Uint8Array {
  const publicKey = decodeBoxKey(keyPair.publicKeyB64);
  const sealed = /^[A-Za-z0-9+/]*={0,2}$/.test(b64.trim()) ? Buffer.from(b64.trim(), 'base64') : undefined;
  if (publicKey === undefined || sealed === undefined || sealed.length < sealedBox.overheadLength) {
    throw new ActivationTokenRejected(RejectReason.sealedBox, 'activation token is not a sealed box for this secondary');
  }
  let opened: Uint8Array | null;
  try {
    opened = sealedBox.open(new Uint8Array(sealed), publicKey, keyPair.secretKey);
  } catch (cause) {
    // tweetnacl throws on a secret key of the wrong size.
    throw new ActivationTokenRejected(RejectReason.sealedBox, 'the secondary key pair is malformed', { cause });
  }
  if (opened === null) {
    throw new ActivationTokenRejected(RejectReason.sealedBox, 'activation token was not sealed to this secondary\'s key, or was altered');
  }
  return opened;
}

function decodeBoxKey(b64: string): Uint8Array | undefined {
  const text = b64.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === nacl.box.publicKeyLength ? new Uint8Array(bytes) : undefined;
}

async function importKey(key: KeyInput, kind: 'private' | 'public'): Promise<CryptoKey | KeyObject | JWK> {
  if (typeof key !== 'string') return key;
  try {
    return kind === 'private' ? await importPKCS8(key, ALGORITHM) : await importSPKI(key, ALGORITHM);
  } catch (cause) {
    throw new InvalidRequest(`the activation ${kind} key is not a ${kind === 'private' ? 'PKCS#8' : 'SPKI'} PEM for ${ALGORITHM}`, { cause });
  }
}

function activationClaims(p: Record<string, unknown>): (Omit<ActivationClaims, 'type'> & { type: unknown }) | undefined {
  const { jti, iat, nbf, exp, addr, accessor, type } = p;
  if (typeof jti !== 'string' || typeof addr !== 'string' || typeof accessor !== 'string') return undefined;
  if (typeof iat !== 'number' || typeof nbf !== 'number' || typeof exp !== 'number') return undefined;
  return { jti, iat, nbf, exp, addr, accessor, type };
}

/** jose's failures by their stable class; anything else is a bug and passes through. */
function rejection(e: unknown): unknown {
  if (e instanceof jose.JWTExpired) return new ActivationTokenRejected(RejectReason.expired, 'activation token has expired', { cause: e });
  if (e instanceof jose.JWTClaimValidationFailed) {
    return e.claim === 'nbf'
      ? new ActivationTokenRejected(RejectReason.notYetValid, 'activation token is not valid yet', { cause: e })
      : new ActivationTokenRejected(RejectReason.malformed, `activation token claim "${e.claim}" is invalid`, { cause: e });
  }
  if (e instanceof jose.JWSSignatureVerificationFailed || e instanceof jose.JOSEAlgNotAllowed) {
    return new ActivationTokenRejected(RejectReason.signature, 'activation token signature is not valid', { cause: e });
  }
  if (e instanceof jose.JWSInvalid || e instanceof jose.JWTInvalid) {
    return new ActivationTokenRejected(RejectReason.malformed, 'activation token is not a valid JWT', { cause: e });
  }
  return e;
}
