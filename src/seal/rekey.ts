/**
 * Vault's barrier rekey (`sys/rekey/init`, `update`, `verify`, `backup`): the holders of the
 * current shares replace them with a new set under a new root key, one attempt at a time.
 *
 *   const rekey = new Rekey({ seal, commit, installed, backup, threshold });
 *   const { nonce } = await rekey.start({ secret_shares: 5, secret_threshold: 3 });
 *   await rekey.update(share1, nonce);  ...
 *   const done = await rekey.update(shareT, nonce);      // done.keys: the new shares
 *
 * Progress lives in memory only, as in Vault: a seal (or a restart) cancels the attempt. The switch
 * is one batch (SealManager.commitRekey): after a crash the node unseals with exactly one of the
 * two share sets. With `require_verification` the new shares take effect only once a threshold of
 * them has been given back (`verify`); until then the old ones stay in force.
 */
import { randomUUID } from 'node:crypto';
import { InvalidRequest } from '../core/errors.js';
import { KEY_BYTES } from './aead.js';
import { ShareCollector } from './collector.js';
import type { SealConfig } from './config.js';
import type { KeyringCommitter, SealManager } from './manager.js';
import { encryptToPgpKey, readPgpKey } from './root-generation-encoding.js';
import { combineShares, decodeShare, sameShare, shareLength, validateShareConfig } from './shares.js';

export interface RekeyStart {
  readonly secret_shares: number;
  readonly secret_threshold: number;
  readonly pgp_keys?: readonly string[] | undefined;
  readonly backup?: boolean | undefined;
  readonly require_verification?: boolean | undefined;
}

/** Vault's RekeyStatusResponse. */
export interface RekeyStatus {
  readonly nonce: string;
  readonly started: boolean;
  readonly t: number;
  readonly n: number;
  readonly progress: number;
  readonly required: number;
  readonly pgp_fingerprints: string[] | null;
  readonly backup: boolean;
  readonly verification_required: boolean;
  readonly verification_nonce?: string;
}

/** Vault's RekeyUpdateResponse once the threshold is reached. */
export interface RekeyResult {
  readonly nonce: string;
  readonly complete: true;
  readonly keys: string[];
  readonly keys_base64: string[];
  readonly pgp_fingerprints: string[] | null;
  readonly backup: boolean;
  readonly verification_required: boolean;
  readonly verification_nonce?: string;
}

export interface VerifyStatus {
  readonly nonce: string;
  readonly started: boolean;
  readonly t: number;
  readonly n: number;
  readonly progress: number;
}

/** The PGP-encrypted new shares kept for `sys/rekey/backup`: fingerprint to hex ciphertexts. */
export interface RekeyBackup {
  readonly nonce: string;
  readonly keys: Record<string, string[]>;
}

export interface RekeyOptions {
  readonly seal: SealManager;
  readonly commit: KeyringCommitter;
  readonly installed: () => Promise<Readonly<Record<string, string>>>;
  /** Stores (or with undefined deletes) the backup, before the rekey takes effect. */
  readonly storeBackup: (backup: RekeyBackup | undefined) => Promise<void>;
  readonly newNonce?: () => string;
}

interface Pending {
  readonly rootKey: Buffer;
  readonly verifier: ShareCollector;
}

interface Attempt {
  readonly config: SealConfig;
  readonly pgpKeys: readonly string[];
  readonly fingerprints: string[];
  readonly backup: boolean;
  readonly verificationRequired: boolean;
  collector: ShareCollector;
  pending?: Pending;
}

export class Rekey {
  #attempt: Attempt | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #newNonce: () => string;

  constructor(private readonly o: RekeyOptions) {
    this.#newNonce = o.newNonce ?? randomUUID;
    o.seal.onChange((e) => {
      if (e.type === 'sealed') this.#clear();
    });
  }

  status(): Promise<RekeyStatus> {
    return this.#exclusive(async () => this.#status());
  }

  start(req: RekeyStart): Promise<RekeyStatus> {
    return this.#exclusive(async () => {
      const pgpKeys = req.pgp_keys ?? [];
      const backup = req.backup === true;
      if (backup && pgpKeys.length === 0) throw new InvalidRequest('cannot request a backup of the new keys without providing PGP keys for encryption');
      if (pgpKeys.length > 0 && pgpKeys.length !== req.secret_shares) throw new InvalidRequest('incorrect number of PGP keys for rekey');
      if (req.secret_threshold > req.secret_shares) throw new InvalidRequest('provided threshold greater than the total shares');
      try {
        validateShareConfig(req.secret_shares, req.secret_threshold);
      } catch (e) {
        throw new InvalidRequest(`invalid rekey seal configuration: ${(e as Error).message}`);
      }
      const fingerprints: string[] = [];
      for (const key of pgpKeys) fingerprints.push((await readPgpKey(key)).fingerprint);
      const current = await this.#currentConfig();
      this.o.seal.cipher();
      if (this.#attempt !== undefined) throw new InvalidRequest('rekey already in progress');
      this.#attempt = {
        config: { type: 'shamir', secret_shares: req.secret_shares, secret_threshold: req.secret_threshold },
        pgpKeys,
        fingerprints,
        backup,
        verificationRequired: req.require_verification === true,
        collector: new ShareCollector({ required: current.secret_threshold, newNonce: this.#newNonce }),
      };
      return this.#status();
    });
  }

  cancel(): Promise<void> {
    return this.#exclusive(async () => this.#clear());
  }

  /** One current share; the new shares once the threshold is reached, else the status. */
  update(key: string, nonce: string): Promise<RekeyStatus | RekeyResult> {
    return this.#exclusive(async () => {
      const current = await this.#currentConfig();
      const a = this.#attempt;
      if (a === undefined) throw new InvalidRequest('no barrier rekey in progress');
      if (a.pending !== undefined) {
        throw new InvalidRequest(`rekey operation already finished; verification must be performed; nonce for the verification operation is "${a.pending.verifier.nonce}"`);
      }
      if (nonce !== a.collector.nonce) throw new InvalidRequest(`incorrect nonce supplied; nonce for this rekey operation is "${a.collector.nonce}"`);
      const share = decodeShare(key);
      const max = shareLength(KEY_BYTES, current.secret_threshold);
      if (share.length < KEY_BYTES) throw new InvalidRequest(`key is shorter than minimum ${KEY_BYTES} bytes`);
      if (share.length > max) throw new InvalidRequest(`key is longer than maximum ${max} bytes`);
      if (a.collector.shares().some((s) => sameShare(s, share))) throw new InvalidRequest('given key has already been provided during this generation operation');
      const { complete } = a.collector.add(share);
      share.fill(0);
      if (!complete) return this.#status();
      const shares = a.collector.shares();
      // Progress starts over whatever the outcome, under the same nonce, as in Vault.
      clearProgress(a);
      const next = await this.o.seal.prepareRekey(shares, a.config).finally(() => shares.forEach((s) => s.fill(0)));
      const out = await this.#encode(a, next.shares);
      const nonceNow = a.collector.nonce;
      if (a.backup) await this.o.storeBackup({ nonce: nonceNow, keys: Object.fromEntries(a.fingerprints.map((fp, i) => [fp, [out.keys[i]!]])) });
      if (a.verificationRequired) {
        a.pending = { rootKey: next.rootKey, verifier: new ShareCollector({ required: a.config.secret_threshold, newNonce: this.#newNonce }) };
        next.shares.forEach((s) => s.fill(0));
        return { nonce: nonceNow, complete: true, ...out, ...this.#pgp(a), verification_required: true, verification_nonce: a.pending.verifier.nonce };
      }
      try {
        await this.o.seal.commitRekey(next.rootKey, a.config, this.o.commit, await this.o.installed());
      } finally {
        next.rootKey.fill(0);
        next.shares.forEach((s) => s.fill(0));
      }
      this.#attempt = undefined;
      return { nonce: nonceNow, complete: true, ...out, ...this.#pgp(a), verification_required: false };
    });
  }

  verifyStatus(): Promise<VerifyStatus> {
    return this.#exclusive(async () => this.#verifyStatus(this.#pendingAttempt()));
  }

  /** Restarts the verification (new nonce, no progress); the rekey itself stays pending. */
  verifyCancel(): Promise<VerifyStatus> {
    return this.#exclusive(async () => {
      const a = this.#pendingAttempt();
      a.pending.verifier.reset();
      return this.#verifyStatus(a);
    });
  }

  /** One of the NEW shares; at their threshold, proven against the pending root key, the rekey takes effect. */
  verifyUpdate(key: string, nonce: string): Promise<VerifyStatus | { nonce: string; complete: true }> {
    return this.#exclusive(async () => {
      const a = this.#pendingAttempt();
      const { verifier, rootKey } = a.pending;
      if (nonce !== verifier.nonce) throw new InvalidRequest(`incorrect nonce supplied; nonce for this verify operation is "${verifier.nonce}"`);
      const share = decodeShare(key);
      if (verifier.shares().some((s) => sameShare(s, share))) throw new InvalidRequest('given key has already been provided during this verify operation');
      const { complete } = verifier.add(share);
      share.fill(0);
      if (!complete) return this.#verifyStatus(a);
      const shares = verifier.shares();
      const verifyNonce = verifier.nonce;
      let combined: Buffer | undefined;
      try {
        combined = await combineShares(shares).catch(() => undefined);
        if (combined === undefined || !combined.equals(rootKey)) {
          verifier.reset();
          throw new InvalidRequest('rekey verification failed; incorrect key shares supplied');
        }
      } finally {
        combined?.fill(0);
        shares.forEach((s) => s.fill(0));
      }
      await this.o.seal.commitRekey(rootKey, a.config, this.o.commit, await this.o.installed());
      this.#clear();
      return { nonce: verifyNonce, complete: true };
    });
  }

  #pendingAttempt(): Attempt & { pending: Pending } {
    this.o.seal.cipher();
    const a = this.#attempt;
    if (a === undefined) throw new InvalidRequest('no rekey configuration found');
    if (a.pending === undefined) throw new InvalidRequest('no rekey verification in progress');
    return a as Attempt & { pending: Pending };
  }

  #verifyStatus(a: Attempt & { pending: Pending }): VerifyStatus {
    return { nonce: a.pending.verifier.nonce, started: true, t: a.config.secret_threshold, n: a.config.secret_shares, progress: a.pending.verifier.progress };
  }

  async #encode(a: Attempt, shares: readonly Buffer[]): Promise<{ keys: string[]; keys_base64: string[] }> {
    if (a.pgpKeys.length === 0) return { keys: shares.map((s) => s.toString('hex')), keys_base64: shares.map((s) => s.toString('base64')) };
    // As Vault: each share's hex form is encrypted to its key; keys is the message in hex, keys_base64 in base64.
    const messages = await Promise.all(shares.map((s, i) => encryptToPgpKey(a.pgpKeys[i]!, s.toString('hex'))));
    return { keys: messages.map((m) => Buffer.from(m, 'base64').toString('hex')), keys_base64: messages };
  }

  #pgp(a: Attempt): { pgp_fingerprints: string[] | null; backup: boolean } {
    return { pgp_fingerprints: a.fingerprints.length > 0 ? a.fingerprints : null, backup: a.backup };
  }

  async #currentConfig(): Promise<{ secret_threshold: number }> {
    const s = await this.o.seal.status();
    if (!s.initialized) throw new InvalidRequest('Vault is not initialized');
    this.o.seal.cipher();
    return { secret_threshold: s.t };
  }

  async #status(): Promise<RekeyStatus> {
    const { secret_threshold } = await this.#currentConfig();
    const a = this.#attempt;
    if (a === undefined) {
      return { nonce: '', started: false, t: 0, n: 0, progress: 0, required: secret_threshold, pgp_fingerprints: null, backup: false, verification_required: false };
    }
    return {
      nonce: a.collector.nonce,
      started: true,
      t: a.config.secret_threshold,
      n: a.config.secret_shares,
      progress: a.collector.progress,
      required: secret_threshold,
      ...this.#pgp(a),
      verification_required: a.verificationRequired,
      ...(a.pending !== undefined ? { verification_nonce: a.pending.verifier.nonce } : {}),
    };
  }

  #clear(): void {
    const a = this.#attempt;
    this.#attempt = undefined;
    if (a === undefined) return;
    clearProgress(a);
    a.pending?.rootKey.fill(0);
    a.pending?.verifier.reset();
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}

/** Forgets the shares given, keeping the attempt's nonce (ShareCollector.reset would change it). */
function clearProgress(a: Attempt): void {
  const nonce = a.collector.nonce;
  a.collector.reset();
  a.collector = new ShareCollector({ required: a.collector.required, newNonce: () => nonce });
}
