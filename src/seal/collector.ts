/**
 * Gathers root key shares for one attempt (an unseal, a DR operation token generation) until the
 * threshold is reached. It never combines: the owner takes `shares()` and verifies the result.
 *
 *   const c = new ShareCollector({ required: 3, shareLength: 33 });
 *   c.add(decodeShare(k1));            // { complete: false, progress: 1 }
 *   ...
 *   if (c.add(k3).complete) combineShares(c.shares());
 *
 * An attempt is named by its nonce (a uuid); reset() starts a new attempt with a new nonce, so a
 * nonce seen by a client never spans two different sets of shares.
 */
import { randomUUID } from 'node:crypto';
import { InvalidRequest, Internal } from '../core/errors.js';
import { sameShare } from './shares.js';

export interface ShareCollectorOptions {
  readonly required: number;
  /** When set, a share of any other length is refused before it counts. */
  readonly shareLength?: number;
  readonly newNonce?: () => string;
}

export interface AddResult {
  readonly complete: boolean;
  readonly progress: number;
}

export class ShareCollector {
  readonly required: number;
  readonly #shareLength: number | undefined;
  readonly #newNonce: () => string;
  #nonce: string;
  #shares: Buffer[] = [];

  constructor(options: ShareCollectorOptions) {
    if (!Number.isInteger(options.required) || options.required < 1) {
      throw new Internal('a share collector needs a positive required count');
    }
    this.required = options.required;
    this.#shareLength = options.shareLength;
    this.#newNonce = options.newNonce ?? randomUUID;
    this.#nonce = this.#newNonce();
  }

  get nonce(): string {
    return this.#nonce;
  }

  get progress(): number {
    return this.#shares.length;
  }

  get complete(): boolean {
    return this.#shares.length >= this.required;
  }

  /** Counts one share. Refuses (InvalidRequest, progress unchanged) a repeat, a wrong length, or extras. */
  add(share: Buffer): AddResult {
    if (this.complete) throw new InvalidRequest('all required shares have already been provided');
    if (this.#shareLength !== undefined && share.length !== this.#shareLength) {
      throw new InvalidRequest(`share must be ${this.#shareLength} bytes, got ${share.length}`);
    }
    if (this.#shares.some((s) => sameShare(s, share))) {
      throw new InvalidRequest('share already provided');
    }
    this.#shares.push(Buffer.from(share));
    return { complete: this.complete, progress: this.progress };
  }

  /** Copies of the shares gathered so far, in the order given. */
  shares(): Buffer[] {
    return this.#shares.map((s) => Buffer.from(s));
  }

  /** Forgets (and zeroes) the shares and starts a new attempt under a new nonce. */
  reset(): void {
    for (const s of this.#shares) s.fill(0);
    this.#shares = [];
    this.#nonce = this.#newNonce();
  }
}
