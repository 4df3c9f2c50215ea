/**
 * DR operation tokens: one generation attempt at a time, authorized by the root key shares (the
 * wire of Vault's `sys/generate-root`, WIRE.md section 5), and the tokens it issues, kept only as
 * SHA-256 hashes with no TTL until revoked.
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
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import { KEY_BYTES, ShareCollector, decodeShare, shareLength, type Random } from '../seal/index.js';
import {
  OTP_LENGTH,
  checkOtp,
  encodeWithOtp,
  encryptToPgpKey,
  newToken,
  randomBase62,
  readPgpKey,
} from './operation-token-encoding.js';
import {
  loadAttempt,
  loadTokens,
  saveAttempt,
  saveTokens,
  type Attempt,
  type Encoding,
  type TokenRecords,
} from './operation-token-records.js';

export { decodeOtp, OTP_LENGTH } from './operation-token-encoding.js';
export { OperationTokenRecord, type TokenRecords } from './operation-token-records.js';

/** The bare object every generate-operation-token endpoint answers (Vault's GenerateRootStatusResponse). */
export interface AttemptStatus {
  readonly nonce: string;
  readonly started: boolean;
  readonly progress: number;
  readonly required: number;
  readonly complete: boolean;
  readonly encoded_token: string;
  /** Same value as encoded_token, for clients that read the generate-root field name. */
  readonly encoded_root_token: string;
  readonly pgp_fingerprint: string;
  /** Non-empty only in the answer to a start that generated the OTP. */
  readonly otp: string;
  readonly otp_length: number;
}

export interface StartRequest {
  /** Empty counts as absent, as Vault's CLI sends both fields empty. */
  readonly otp?: string | undefined;
  readonly pgp_key?: string | undefined;
}

export interface UpdateRequest {
  readonly key: string;
  readonly nonce: string;
}

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

/** Shares gathered for the attempt named by `nonce`; in memory only. */
interface Progress {
  readonly nonce: string;
  readonly collector: ShareCollector;
}

export class OperationTokens {
  readonly #records: TokenRecords;
  readonly #threshold: () => number | Promise<number>;
  readonly #verifyShares: (shares: Buffer[]) => Promise<boolean>;
  readonly #random: Random;
  readonly #now: () => Date;
  readonly #newNonce: () => string;
  #progress: Progress | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: OperationTokensOptions) {
    this.#records = options.records;
    this.#threshold = options.threshold;
    this.#verifyShares = options.verifyShares;
    this.#random = options.random ?? randomBytes;
    this.#now = options.now ?? (() => new Date());
    this.#newNonce = options.newNonce ?? randomUUID;
  }

  /**
   * Starts an attempt. With neither `otp` nor `pgp_key` a base62 OTP is generated and returned in
   * this answer only. InvalidRequest when an attempt is in progress or the input is unusable.
   */
  start(request: StartRequest): Promise<AttemptStatus> {
    return this.#exclusive(async () => {
      const otp = request.otp || undefined;
      const pgpKey = request.pgp_key || undefined;
      if (otp !== undefined && pgpKey !== undefined) throw new InvalidRequest('only one of otp and pgp_key may be given');
      if (otp !== undefined) checkOtp(otp);
      if ((await loadAttempt(this.#records)) !== undefined) {
        throw new InvalidRequest('a DR operation token generation attempt is already in progress; cancel it first');
      }
      let encoding: Encoding;
      let generatedOtp = '';
      if (pgpKey !== undefined) {
        encoding = { type: 'pgp', pgp_key: pgpKey.trim(), fingerprint: (await readPgpKey(pgpKey)).fingerprint };
      } else {
        generatedOtp = otp === undefined ? randomBase62(OTP_LENGTH, this.#random) : '';
        encoding = { type: 'otp', otp: otp ?? generatedOtp };
      }
      const attempt: Attempt = { nonce: this.#newNonce(), started_at: this.#now().toISOString(), encoding };
      await saveAttempt(this.#records, attempt);
      this.#dropProgress();
      return { ...(await this.#statusOf(attempt)), otp: generatedOtp };
    });
  }

  status(): Promise<AttemptStatus> {
    return this.#exclusive(async () => this.#statusOf(await loadAttempt(this.#records)));
  }

  /** Ends the attempt and forgets its shares; nothing happens when there is none. */
  cancel(): Promise<void> {
    return this.#exclusive(async () => {
      this.#dropProgress();
      await saveAttempt(this.#records, undefined);
    });
  }

  /**
   * Counts one share (hex or base64) for the attempt named by `nonce`. At the threshold the shares
   * are verified: a wrong combination is InvalidRequest and progress starts again from zero under
   * the same nonce; a right one issues the token and ends the attempt. A refused share (bad
   * encoding, wrong length, given twice) leaves progress as it was.
   */
  update(request: UpdateRequest): Promise<AttemptStatus> {
    return this.#exclusive(async () => {
      const attempt = await loadAttempt(this.#records);
      if (attempt === undefined) throw new InvalidRequest('no DR operation token generation attempt is in progress');
      if (request.nonce !== attempt.nonce) {
        throw new InvalidRequest(`incorrect nonce supplied; the nonce of the attempt in progress is ${attempt.nonce}`);
      }
      const share = decodeShare(request.key);
      const collector = await this.#collectorFor(attempt.nonce);
      try {
        if (!collector.add(share).complete) return this.#statusOf(attempt);
      } finally {
        share.fill(0);
      }
      // Progress is cleared whatever the verdict, as Vault does: a failed combination starts over.
      const shares = collector.shares();
      this.#dropProgress();
      let valid: boolean;
      try {
        valid = await this.#verifyShares(shares);
      } finally {
        for (const s of shares) s.fill(0);
      }
      if (!valid) {
        throw new InvalidRequest('the key shares do not combine to the root key; progress has been reset, provide the shares again');
      }
      return this.#issue(attempt, collector.required);
    });
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

  async #issue(attempt: Attempt, required: number): Promise<AttemptStatus> {
    const token = newToken(this.#random);
    const encoded =
      attempt.encoding.type === 'otp'
        ? encodeWithOtp(token, attempt.encoding.otp)
        : await encryptToPgpKey(attempt.encoding.pgp_key, token);
    // The hash is stored before the encoded token leaves, so any token an operator holds
    // validates. The attempt goes last: a crash in between leaves an attempt to cancel, never a
    // finished attempt with no token behind it.
    const tokens = await loadTokens(this.#records);
    await saveTokens(this.#records, [...tokens, { sha256: sha256Hex(token), issued_at: this.#now().toISOString() }]);
    await saveAttempt(this.#records, undefined);
    return {
      nonce: attempt.nonce,
      started: true,
      progress: required,
      required,
      complete: true,
      encoded_token: encoded,
      encoded_root_token: encoded,
      pgp_fingerprint: attempt.encoding.type === 'pgp' ? attempt.encoding.fingerprint : '',
      otp: '',
      otp_length: OTP_LENGTH,
    };
  }

  /** The collector of the current attempt, new when the attempt or the threshold changed. */
  async #collectorFor(nonce: string): Promise<ShareCollector> {
    const required = await this.#threshold();
    const current = this.#progress;
    if (current !== undefined && current.nonce === nonce && current.collector.required === required) {
      return current.collector;
    }
    this.#dropProgress();
    const collector = new ShareCollector({
      required,
      shareLength: shareLength(KEY_BYTES, required),
      newNonce: () => nonce,
    });
    this.#progress = { nonce, collector };
    return collector;
  }

  #dropProgress(): void {
    this.#progress?.collector.reset();
    this.#progress = undefined;
  }

  async #statusOf(attempt: Attempt | undefined): Promise<AttemptStatus> {
    const required = await this.#threshold();
    const progress =
      attempt !== undefined && this.#progress?.nonce === attempt.nonce && this.#progress.collector.required === required
        ? this.#progress.collector.progress
        : 0;
    return {
      nonce: attempt?.nonce ?? '',
      started: attempt !== undefined,
      progress,
      required,
      complete: false,
      encoded_token: '',
      encoded_root_token: '',
      pgp_fingerprint: attempt?.encoding.type === 'pgp' ? attempt.encoding.fingerprint : '',
      otp: '',
      otp_length: OTP_LENGTH,
    };
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
