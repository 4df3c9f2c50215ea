/**
 * Token generation from the root key shares: the mechanism behind Vault's `sys/generate-root` and
 * the DR `generate-operation-token` endpoints (WIRE.md sections 5 and 8), one attempt at a time.
 * What the generated token *is* belongs to the caller: `issue` makes it valid (a root token in
 * the token store, the hash of a DR operation token) before its encoded form leaves.
 *
 *   const gen = new RootGeneration({ records, attemptRecord: 'generate-root/attempt', what: 'root token',
 *     threshold: async () => (await seal.status()).t, verifyShares: (s) => seal.verifyRootKeyShares(s),
 *     issue: async (token) => { await tokenStore.createRoot({ id: token }); } });
 *   const { nonce, otp } = await gen.start({});              // otp is shown this once
 *   await gen.update({ key: share1, nonce });                // progress 1/3 ...
 *   const { encoded_token } = await gen.update({ key: share3, nonce });
 *   decodeOtp(encoded_token, otp);                           // the token `issue` received
 *
 * The attempt (nonce, OTP or PGP key) is persisted and survives a restart; the shares given so
 * far are not (they are root key material) and must be given again after one. Operations run one
 * at a time, in call order.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Internal, InvalidRequest } from '../core/errors.js';
import { KEY_BYTES, type Random } from './aead.js';
import { ShareCollector } from './collector.js';
import { OTP_LENGTH, checkOtp, encodeWithOtp, encryptToPgpKey, newToken, randomBase62, readPgpKey } from './root-generation-encoding.js';
import { decodeShare, shareLength } from './shares.js';

/** The bare object every generation endpoint answers (Vault's GenerateRootStatusResponse). */
export interface GenerationStatus {
  readonly nonce: string;
  readonly started: boolean;
  readonly progress: number;
  readonly required: number;
  readonly complete: boolean;
  readonly encoded_token: string;
  /** Same value as encoded_token, set when complete (Vault's generate-root field name). */
  readonly encoded_root_token: string;
  readonly pgp_fingerprint: string;
  /** Non-empty only in the answer to a start that generated the OTP. */
  readonly otp: string;
  readonly otp_length: number;
}

export interface GenerationStart {
  /** Empty counts as absent, as Vault's CLI sends both fields empty. */
  readonly otp?: string | undefined;
  readonly pgp_key?: string | undefined;
}

export interface GenerationUpdate {
  readonly key: string;
  readonly nonce: string;
}

/** Where the attempt record lives; `put(name, undefined)` deletes. */
export interface GenerationRecords {
  get(name: string): Promise<Buffer | undefined>;
  put(name: string, value: Buffer | undefined): Promise<void>;
}

export interface RootGenerationOptions {
  readonly records: GenerationRecords;
  /** Name of the attempt record in `records`. */
  readonly attemptRecord: string;
  /** What is generated, for messages: 'root token', 'DR operation token'. */
  readonly what: string;
  /** The seal threshold: how many shares an attempt needs. */
  readonly threshold: () => number | Promise<number>;
  /** True when the shares combine to the root key (SealManager.verifyRootKeyShares). */
  readonly verifyShares: (shares: Buffer[]) => Promise<boolean>;
  /**
   * Makes the new token valid; called once the token is encoded and before the attempt ends, so
   * any encoded token an operator holds is valid, and a failure here leaves the attempt to retry
   * or cancel. It must not log the token.
   */
  readonly issue: (token: string) => Promise<void>;
  readonly random?: Random;
  readonly now?: () => Date;
  readonly newNonce?: () => string;
}

const Encoding = z.discriminatedUnion('type', [
  z.object({ type: z.literal('otp'), otp: z.string() }),
  z.object({ type: z.literal('pgp'), pgp_key: z.string(), fingerprint: z.string() }),
]);
type Encoding = z.infer<typeof Encoding>;

const Attempt = z.object({
  nonce: z.string().min(1),
  /** RFC 3339. */
  started_at: z.string(),
  encoding: Encoding,
});
type Attempt = z.infer<typeof Attempt>;

/** Shares gathered for the attempt named by `nonce`; in memory only. */
interface Progress {
  readonly nonce: string;
  readonly collector: ShareCollector;
}

export class RootGeneration {
  readonly #o: RootGenerationOptions;
  readonly #random: Random;
  readonly #now: () => Date;
  readonly #newNonce: () => string;
  #progress: Progress | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: RootGenerationOptions) {
    this.#o = options;
    this.#random = options.random ?? randomBytes;
    this.#now = options.now ?? (() => new Date());
    this.#newNonce = options.newNonce ?? randomUUID;
  }

  /**
   * Starts an attempt. With neither `otp` nor `pgp_key` a base62 OTP is generated and returned in
   * this answer only. InvalidRequest when an attempt is in progress or the input is unusable.
   */
  start(request: GenerationStart): Promise<GenerationStatus> {
    return this.#exclusive(async () => {
      const otp = request.otp || undefined;
      const pgpKey = request.pgp_key || undefined;
      if (otp !== undefined && pgpKey !== undefined) throw new InvalidRequest('only one of otp and pgp_key may be given');
      if (otp !== undefined) checkOtp(otp);
      if ((await this.#load()) !== undefined) {
        throw new InvalidRequest(`a ${this.#o.what} generation attempt is already in progress; cancel it first`);
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
      await this.#save(attempt);
      this.#dropProgress();
      return { ...(await this.#statusOf(attempt)), otp: generatedOtp };
    });
  }

  status(): Promise<GenerationStatus> {
    return this.#exclusive(async () => this.#statusOf(await this.#load()));
  }

  /** Ends the attempt and forgets its shares; nothing happens when there is none. */
  cancel(): Promise<void> {
    return this.#exclusive(async () => {
      this.#dropProgress();
      await this.#save(undefined);
    });
  }

  /** Forgets the shares given so far (when the node seals); the attempt itself stays. */
  forgetShares(): Promise<void> {
    return this.#exclusive(async () => this.#dropProgress());
  }

  /**
   * Counts one share (hex or base64) for the attempt named by `nonce`. At the threshold the shares
   * are verified: a wrong combination is InvalidRequest and progress starts again from zero under
   * the same nonce; a right one issues the token and ends the attempt. A refused share (bad
   * encoding, wrong length, given twice) leaves progress as it was.
   */
  update(request: GenerationUpdate): Promise<GenerationStatus> {
    return this.#exclusive(async () => {
      const attempt = await this.#load();
      if (attempt === undefined) throw new InvalidRequest(`no ${this.#o.what} generation attempt is in progress`);
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
        valid = await this.#o.verifyShares(shares);
      } finally {
        for (const s of shares) s.fill(0);
      }
      if (!valid) {
        throw new InvalidRequest('the key shares do not combine to the root key; progress has been reset, provide the shares again');
      }
      return this.#issue(attempt, collector.required);
    });
  }

  async #issue(attempt: Attempt, required: number): Promise<GenerationStatus> {
    const token = newToken(this.#random);
    const encoded =
      attempt.encoding.type === 'otp'
        ? encodeWithOtp(token, attempt.encoding.otp)
        : await encryptToPgpKey(attempt.encoding.pgp_key, token);
    // The token is made valid before its encoded form leaves; the attempt goes last: a crash in
    // between leaves an attempt to cancel, never a finished attempt with no token behind it.
    await this.#o.issue(token);
    await this.#save(undefined);
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
    const required = await this.#o.threshold();
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

  async #statusOf(attempt: Attempt | undefined): Promise<GenerationStatus> {
    const required = await this.#o.threshold();
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

  async #load(): Promise<Attempt | undefined> {
    const name = this.#o.attemptRecord;
    const value = await this.#o.records.get(name);
    if (value === undefined) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(value.toString('utf8'));
    } catch (cause) {
      throw new Internal(`record ${name} is not JSON`, { cause });
    }
    const parsed = Attempt.safeParse(json);
    if (!parsed.success) throw new Internal(`record ${name} is malformed`, { cause: parsed.error });
    return parsed.data;
  }

  /** Saves the attempt, or deletes it when `attempt` is undefined. */
  async #save(attempt: Attempt | undefined): Promise<void> {
    await this.#o.records.put(this.#o.attemptRecord, attempt === undefined ? undefined : Buffer.from(JSON.stringify(attempt), 'utf8'));
  }

  /** Runs `fn` after every earlier call has settled, whatever their outcome. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}
