/**
 * DR operation tokens: one generation attempt at a time, authorized by the root key shares (the
 * wire of Vault's `sys/generate-root`, WIRE.md section 5, and the same mechanism:
 * seal/root-generation.ts), and the tokens it issues, kept only as SHA-256 hashes with no TTL
 * until revoked.
 *
 *   const tokens = new OperationTokens({ records, threshold: async () => (await seal.status()).t,
 *     verifyShares: (s) => seal.verifyRootKeyShares(s) });
 *   const { nonce, otp } = await tokens.start({});          // otp is shown this once
 *   await tokens.update({ key: share1, nonce });             // progress 1/3 ...
 *   const { encoded_token } = await tokens.update({ key: share3, nonce });
 *   const token = decodeOtp(encoded_token, otp);
 *   await tokens.validate(token);                            // true
 *   await tokens.revoke(token);                              // operation-token/delete
 *
 * The attempt (nonce, OTP or PGP key) and the hashes are persisted and survive a restart; the
 * shares given so far are not (they are root key material) and must be given again after one.
 * All operations run one at a time, in call order.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { PermissionDenied } from '../core/errors.js';
import type { Random } from '../seal/index.js';
import {
  RootGeneration,
  type GenerationStart,
  type GenerationStatus,
  type GenerationUpdate,
} from '../seal/root-generation.js';
import { OperationTokenRecord, loadTokens, saveTokens, type TokenRecords } from './operation-token-records.js';

export { decodeOtp, OTP_LENGTH } from '../seal/root-generation-encoding.js';
export { OperationTokenRecord, type TokenRecords } from './operation-token-records.js';

/** The bare object every generate-operation-token endpoint answers (Vault's GenerateRootStatusResponse). */
export type AttemptStatus = GenerationStatus;
export type StartRequest = GenerationStart;
export type UpdateRequest = GenerationUpdate;

export interface OperationTokensOptions {
  readonly records: TokenRecords;
  /** The seal threshold: how many shares an attempt needs. */
  readonly threshold: () => number | Promise<number>;
  /** True when the shares combine to the root key (SealManager.verifyRootKeyShares). */
  readonly verifyShares: (shares: Buffer[]) => Promise<boolean>;
  readonly random?: Random;
  readonly now?: () => Date;
  readonly newNonce?: () => string;
}

export class OperationTokens {
  readonly #records: TokenRecords;
  readonly #generation: RootGeneration;
  readonly #now: () => Date;
  /** Orders the token list's read-modify-writes (issue, revoke) and reads behind each other. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: OperationTokensOptions) {
    this.#records = options.records;
    const now = options.now ?? (() => new Date());
    this.#now = now;
    this.#generation = new RootGeneration({
      records: options.records,
      attemptRecord: OperationTokenRecord.attempt,
      what: 'DR operation token',
      threshold: options.threshold,
      verifyShares: options.verifyShares,
      now,
      ...(options.random ? { random: options.random } : {}),
      ...(options.newNonce ? { newNonce: options.newNonce } : {}),
      // Runs inside update(), itself inside #exclusive: the list is not changed meanwhile.
      issue: async (token) => {
        const tokens = await loadTokens(this.#records);
        await saveTokens(this.#records, [...tokens, { sha256: sha256Hex(token), issued_at: this.#now().toISOString() }]);
      },
    });
  }

  /**
   * Starts an attempt. With neither `otp` nor `pgp_key` a base62 OTP is generated and returned in
   * this answer only. InvalidRequest when an attempt is in progress or the input is unusable.
   */
  start(request: StartRequest): Promise<AttemptStatus> {
    return this.#exclusive(() => this.#generation.start(request));
  }

  status(): Promise<AttemptStatus> {
    return this.#exclusive(() => this.#generation.status());
  }

  /** Ends the attempt and forgets its shares; nothing happens when there is none. */
  cancel(): Promise<void> {
    return this.#exclusive(() => this.#generation.cancel());
  }

  /**
   * Counts one share (hex or base64) for the attempt named by `nonce`; at the threshold a right
   * combination issues the token (its hash is stored) and ends the attempt. See RootGeneration.update.
   */
  update(request: UpdateRequest): Promise<AttemptStatus> {
    return this.#exclusive(() => this.#generation.update(request));
  }

  /** True when `token` was issued and not revoked. Compares hashes in constant time. */
  validate(token: string): Promise<boolean> {
    return this.#exclusive(async () => indexOf(await loadTokens(this.#records), token) >= 0);
  }

  /** Revokes `token`; PermissionDenied (403, as everywhere else) when it is not a valid DR operation token. */
  revoke(token: string): Promise<void> {
    return this.#exclusive(async () => {
      const tokens = await loadTokens(this.#records);
      const at = indexOf(tokens, token);
      if (at < 0) throw new PermissionDenied('invalid DR operation token');
      await saveTokens(this.#records, tokens.filter((_, i) => i !== at));
    });
  }

  /** Runs `fn` after every earlier call has settled, whatever their outcome. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}

function sha256Hex(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Position of the token's hash in the list, or -1. Every entry is compared, in constant time, so
 * the timing says nothing about which or how many hashes share a prefix with the guess. A plain
 * SHA-256 suffices: tokens carry about 143 random bits, far beyond guessing.
 */
function indexOf(tokens: readonly { readonly sha256: string }[], token: string): number {
  const want = Buffer.from(sha256Hex(token), 'hex');
  let found = -1;
  tokens.forEach((t, i) => {
    if (timingSafeEqual(Buffer.from(t.sha256, 'hex'), want) && found < 0) found = i;
  });
  return found;
}
