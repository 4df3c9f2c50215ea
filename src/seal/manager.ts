/**
 * The seal: initialisation, unseal by Shamir shares, seal, and the keyring while unsealed.
 *
 *   const seal = new SealManager(records);
 *   const { keys } = await seal.init({ secret_shares: 5, secret_threshold: 3 });  // still sealed
 *   await seal.unseal(keys[0]!); await seal.unseal(keys[3]!);
 *   (await seal.unseal(keys[1]!)).sealed;   // false
 *   seal.cipher().encrypt(plain, aad);      // throws Sealed while sealed
 *
 * Records: 'seal-config' (JSON, its presence means initialised) and 'keyring' (the keyring sealed
 * under the root key). The root key itself is never stored; a wrong share combination is caught
 * because it cannot open the keyring (shamir-secret-sharing silently returns garbage otherwise).
 * All state changes run one at a time, in call order.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Internal, InvalidRequest, NotInitialized, Sealed } from '../core/errors.js';
import { KEY_BYTES, type Random } from './aead.js';
import { ShareCollector } from './collector.js';
import { checkSealConfig, decodeSealConfig, encodeSealConfig, type SealConfig } from './config.js';
import { CiphertextRejected, RejectReason } from './errors.js';
import { Keyring } from './keyring.js';
import { KEYRING_RECORD_KEY, openRecord, sealRecord, type KeyringRecord } from './keyring-record.js';
import { combineShares, decodeShare, shareLength, splitRootKey, validateShareConfig } from './shares.js';

/** The two records the seal keeps; the node backs this with storage outside the barrier. */
export interface SystemRecords {
  get(name: string): Promise<Buffer | undefined>;
  put(name: string, value: Buffer): Promise<void>;
}

export const RecordName = { sealConfig: 'seal-config', keyring: 'keyring' } as const;

/** What a rotation or rekey writes in one batch: the replicated record (ciphertext) and the system records. */
export interface KeyringCommit {
  readonly record: { readonly key: string; readonly value: Buffer };
  readonly system: readonly { readonly name: string; readonly value: Buffer }[];
}

/** Writes a KeyringCommit durably and atomically (the node: the engine's commit path). */
export type KeyringCommitter = (change: KeyringCommit) => Promise<void>;

/** sys/seal-status without `version` (the HTTP layer adds it). */
export interface SealStatus {
  readonly type: 'shamir';
  readonly initialized: boolean;
  readonly sealed: boolean;
  readonly t: number;
  readonly n: number;
  readonly progress: number;
  /** The unseal attempt's nonce; '' when no share has been given, as Vault. */
  readonly nonce: string;
}

export interface InitRequest {
  readonly secret_shares: number;
  readonly secret_threshold: number;
}

export interface InitResult {
  readonly keys: string[];
  readonly keysBase64: string[];
  readonly rootKey: Buffer;
}

export type SealEvent = { readonly type: 'sealed' } | { readonly type: 'unsealed' };

/** What a DR primary hands a secondary at activation. */
export interface SealExport {
  readonly sealConfig: SealConfig;
  readonly encryptedKeyring: Buffer;
}

export interface SealManagerOptions {
  readonly random?: Random;
  readonly newNonce?: () => string;
  /** Receives what a change listener throws; listeners never undo or block a state change. */
  readonly onListenerError?: (error: unknown) => void;
}

type State =
  | { readonly type: 'sealed'; readonly attempt?: ShareCollector }
  /** rootKey is undefined after an adoption that shipped the keyring itself (DR activation). */
  | { readonly type: 'unsealed'; readonly keyring: Keyring; readonly rootKey: Buffer | undefined };

const INVALID_KEY = 'Unseal failed, invalid key';

export class SealManager {
  readonly #records: SystemRecords;
  readonly #random: Random;
  readonly #newNonce: () => string;
  readonly #onListenerError: (error: unknown) => void;
  readonly #listeners = new Set<(event: SealEvent) => void>();
  #state: State = { type: 'sealed' };
  #queue: Promise<unknown> = Promise.resolve();

  constructor(records: SystemRecords, options: SealManagerOptions = {}) {
    this.#records = records;
    this.#random = options.random ?? randomBytes;
    this.#newNonce = options.newNonce ?? randomUUID;
    this.#onListenerError =
      options.onListenerError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
  }

  status(): Promise<SealStatus> {
    return this.#exclusive(async () => this.#statusOf(await this.#config()));
  }

  /** Creates root key and keyring and returns the shares. The node stays sealed, as Vault. */
  init(request: InitRequest): Promise<InitResult> {
    return this.#exclusive(async () => {
      const { secret_shares: n, secret_threshold: t } = request;
      validateShareConfig(n, t);
      if ((await this.#config()) !== undefined) throw new InvalidRequest('Vault is already initialized');
      const rootKey = Buffer.from(this.#random(KEY_BYTES));
      const keyring = Keyring.generate(this.#random);
      const sealedKeyring = keyring.sealWith(rootKey);
      keyring.destroy();
      const shares = await splitRootKey(rootKey, n, t);
      // The config is the "initialised" marker, so it goes last: a crash in between leaves an
      // uninitialised node that can simply be initialised again.
      await this.#records.put(RecordName.keyring, sealedKeyring);
      await this.#records.put(RecordName.sealConfig, encodeSealConfig({ type: 'shamir', secret_shares: n, secret_threshold: t }));
      return {
        keys: shares.map((s) => s.toString('hex')),
        keysBase64: shares.map((s) => s.toString('base64')),
        rootKey,
      };
    });
  }

  /**
   * Counts one share (hex or base64). At the threshold the shares are combined and must open the
   * keyring; if not, the attempt is discarded (progress 0) and InvalidRequest thrown. A refused
   * share (bad encoding, wrong length, repeated) leaves the attempt as it was.
   */
  unseal(key: string): Promise<SealStatus> {
    return this.#exclusive(async () => {
      const config = await this.#requireConfig();
      if (this.#state.type === 'unsealed') return this.#statusOf(config);
      const share = decodeShare(key);
      const attempt = this.#state.attempt ?? this.#newAttempt(config);
      const { complete } = attempt.add(share);
      share.fill(0);
      if (!complete) {
        this.#state = { type: 'sealed', attempt };
        return this.#statusOf(config);
      }
      const shares = attempt.shares();
      attempt.reset();
      this.#state = { type: 'sealed' };
      let rootKey: Buffer;
      try {
        rootKey = await combineShares(shares);
      } catch (cause) {
        throw new InvalidRequest(INVALID_KEY, { cause });
      } finally {
        for (const s of shares) s.fill(0);
      }
      await this.#openKeyring(rootKey);
      return this.#statusOf(config);
    });
  }

  /** Discards the current unseal attempt. */
  resetUnseal(): Promise<SealStatus> {
    return this.#exclusive(async () => {
      if (this.#state.type === 'sealed') {
        this.#state.attempt?.reset();
        this.#state = { type: 'sealed' };
      }
      return this.#statusOf(await this.#config());
    });
  }

  /** Unseals with the whole root key (dev mode, tests). A wrong key is InvalidRequest. */
  unsealWithRootKey(rootKey: Buffer): Promise<SealStatus> {
    return this.#exclusive(async () => {
      const config = await this.#requireConfig();
      if (this.#state.type === 'sealed') {
        this.#state.attempt?.reset();
        this.#state = { type: 'sealed' };
        await this.#openKeyring(Buffer.from(rootKey));
      }
      return this.#statusOf(config);
    });
  }

  /** Drops keyring and root key from memory (zeroed: stale references to the keyring fail Sealed). */
  seal(): Promise<void> {
    return this.#exclusive(async () => this.#sealNow());
  }

  /** The live keyring; Sealed while sealed. Ask again after a seal/unseal, never keep it across one. */
  cipher(): Keyring {
    if (this.#state.type !== 'unsealed') throw new Sealed();
    return this.#state.keyring;
  }

  /**
   * Adds a keyring term for new writes. `commit` durably writes, in one batch, the replicated
   * keyring record (so secondaries hold the term before any value under it) and the sealed keyring
   * (so a restart unseals with every term); only then does the live keyring switch to the term.
   * A crash before the commit leaves the old keyring, after it the new one: both read everything.
   */
  rotate(commit: KeyringCommitter, installed: Readonly<Record<string, string>>, now: Date): Promise<number> {
    return this.#exclusive(async () => {
      const { keyring, rootKey } = this.#unsealed();
      const config = await this.#requireConfig();
      // Without the root key (a DR secondary activated and promoted without a restart) the stored
      // sealed keyring stays: its first term opens the record, which holds every term (unseal
      // adopts it, VaultCore.reload), so a restart still reads everything.
      const stored = rootKey === undefined ? await this.#records.get(RecordName.keyring) : undefined;
      if (rootKey === undefined && stored === undefined) throw new Internal('keyring record is missing');
      const key = Buffer.from(this.#random(KEY_BYTES));
      const next = keyring.clone();
      try {
        const term = next.rotate(key);
        const sealedKeyring = rootKey !== undefined ? next.sealWith(rootKey) : Buffer.from(stored!);
        await commit(this.#change(keyring, { keyring: next, sealedKeyring, sealConfig: config, installed: { ...installed, [String(term)]: now.toISOString() } }));
        keyring.rotate(key);
        return term;
      } finally {
        next.destroy();
        key.fill(0);
      }
    });
  }

  /** Commits the record for the keyring as it is (a node's first record, at init). */
  republish(commit: KeyringCommitter, installed: Readonly<Record<string, string>>): Promise<void> {
    return this.#exclusive(async () => {
      const { keyring, rootKey } = this.#unsealedWithRoot('publishing the keyring');
      const config = await this.#requireConfig();
      await commit(this.#change(keyring, { keyring, sealedKeyring: keyring.sealWith(rootKey), sealConfig: config, installed }));
    });
  }

  /**
   * Checks `shares` against the stored keyring (the current shares' holders) and returns a new
   * root key with its shares under `config`; nothing changes until commitRekey. A wrong set is
   * InvalidRequest with Vault's wording.
   */
  prepareRekey(shares: readonly Buffer[], config: SealConfig): Promise<{ rootKey: Buffer; shares: Buffer[] }> {
    return this.#exclusive(async () => {
      this.#unsealed();
      await this.#requireConfig();
      const record = await this.#records.get(RecordName.keyring);
      if (record === undefined) throw new Internal('keyring record is missing');
      let recovered: Buffer | undefined;
      try {
        recovered = await combineShares(shares);
        if (recovered.length !== KEY_BYTES) throw new InvalidRequest('root key verification failed: invalid key');
        Keyring.openWith(record, recovered, this.#random).destroy();
      } catch (e) {
        if (e instanceof InvalidRequest || (e instanceof CiphertextRejected && e.reason === RejectReason.authentication)) {
          throw new InvalidRequest('root key verification failed: the key shares given do not unseal this node', { cause: e });
        }
        throw e;
      } finally {
        recovered?.fill(0);
      }
      const rootKey = Buffer.from(this.#random(KEY_BYTES));
      return { rootKey, shares: await splitRootKey(rootKey, config.secret_shares, config.secret_threshold) };
    });
  }

  /**
   * Makes `rootKey` (from prepareRekey) the root key: the keyring sealed under it and the new seal
   * config are committed in one batch with the replicated record, so the node (and every
   * secondary) unseals after a crash with exactly one of the two share sets.
   */
  commitRekey(rootKey: Buffer, config: SealConfig, commit: KeyringCommitter, installed: Readonly<Record<string, string>>): Promise<void> {
    return this.#exclusive(async () => {
      const state = this.#unsealed();
      const sealedKeyring = state.keyring.sealWith(rootKey);
      await commit(this.#change(state.keyring, { keyring: state.keyring, sealedKeyring, sealConfig: config, installed }));
      state.rootKey?.fill(0);
      this.#state = { type: 'unsealed', keyring: state.keyring, rootKey: Buffer.from(rootKey) };
    });
  }

  /**
   * A secondary applying its primary's keyring record (called inside the storage batch that writes
   * it, synchronously): the system records to write in that batch, and what to do once durable
   * (adopt the new terms into the live keyring). Sealed while sealed.
   */
  applyReplicated(ct: Buffer): { system: { name: string; value: Buffer }[]; after: () => void } {
    if (this.#state.type !== 'unsealed') throw new Sealed();
    const record = openRecord(this.#state.keyring, ct);
    return {
      system: [
        { name: RecordName.keyring, value: record.sealedKeyring },
        { name: RecordName.sealConfig, value: encodeSealConfig(record.sealConfig) },
      ],
      after: () => this.adoptRecord(record),
    };
  }

  /**
   * Takes a keyring record's terms into the live keyring (an HA standby after its active node
   * rotated, a secondary after applying one). A root key held that no longer opens the record's
   * sealed keyring (a rekey elsewhere) is dropped, so this node never seals under a stale one.
   */
  adoptRecord(record: KeyringRecord): void {
    const state = this.#state;
    if (state.type !== 'unsealed') return;
    state.keyring.adopt(record.keyring);
    record.keyring.destroy();
    if (state.rootKey === undefined) return;
    try {
      Keyring.openWith(record.sealedKeyring, state.rootKey, this.#random).destroy();
    } catch {
      state.rootKey.fill(0);
      this.#state = { type: 'unsealed', keyring: state.keyring, rootKey: undefined };
    }
  }

  #change(live: Keyring, record: KeyringRecord): KeyringCommit {
    return {
      record: { key: KEYRING_RECORD_KEY, value: sealRecord(live, record) },
      system: [
        { name: RecordName.keyring, value: record.sealedKeyring },
        { name: RecordName.sealConfig, value: encodeSealConfig(record.sealConfig) },
      ],
    };
  }

  #unsealed(): { keyring: Keyring; rootKey: Buffer | undefined } {
    if (this.#state.type !== 'unsealed') throw new Sealed();
    return { keyring: this.#state.keyring, rootKey: this.#state.rootKey };
  }

  #unsealedWithRoot(what: string): { keyring: Keyring; rootKey: Buffer } {
    if (this.#state.type !== 'unsealed') throw new Sealed();
    const { keyring, rootKey } = this.#state;
    if (rootKey === undefined) throw new InvalidRequest(`${what} needs this node unsealed with its key shares (it was activated or rekeyed elsewhere since its last unseal)`);
    return { keyring, rootKey };
  }

  /** Subscribes to sealed/unsealed transitions; returns the unsubscribe function. */
  onChange(listener: (event: SealEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The stored seal config and sealed keyring, for a DR secondary to adopt at activation. */
  exportForSecondary(): Promise<SealExport> {
    return this.#exclusive(async () => {
      const sealConfig = await this.#requireConfig();
      const encryptedKeyring = await this.#records.get(RecordName.keyring);
      if (encryptedKeyring === undefined) throw new Internal('keyring record is missing');
      return { sealConfig, encryptedKeyring: Buffer.from(encryptedKeyring) };
    });
  }

  /**
   * Takes over a primary's seal config and keyring (DR activation). The node ends sealed and
   * unseals only with the primary's shares. There is no atomic pair write: after a crash between
   * the two puts, activation must be run again.
   */
  adoptFromPrimary(from: SealExport): Promise<void> {
    return this.#exclusive(async () => {
      const config = checkSealConfig(from.sealConfig);
      if (!Keyring.isSealedRecord(from.encryptedKeyring)) {
        throw new InvalidRequest('encrypted keyring is malformed');
      }
      this.#sealNow();
      await this.#records.put(RecordName.keyring, Buffer.from(from.encryptedKeyring));
      await this.#records.put(RecordName.sealConfig, encodeSealConfig(config));
    });
  }

  /**
   * DR activation with the keyring shipped in the activation bundle: adopts the primary's seal
   * config and sealed keyring, and stays unsealed with `keyring` (serialized) so the secondary
   * serves at once. After a restart it unseals with the primary's shares like any node.
   */
  adoptFromPrimaryUnsealed(from: SealExport, keyring: Buffer): Promise<void> {
    return this.#exclusive(async () => {
      const config = checkSealConfig(from.sealConfig);
      if (!Keyring.isSealedRecord(from.encryptedKeyring)) throw new InvalidRequest('encrypted keyring is malformed');
      const live = Keyring.deserialize(keyring, this.#random);
      this.#sealNow();
      await this.#records.put(RecordName.keyring, Buffer.from(from.encryptedKeyring));
      await this.#records.put(RecordName.sealConfig, encodeSealConfig(config));
      this.#state = { type: 'unsealed', keyring: live, rootKey: undefined };
      this.#emit({ type: 'unsealed' });
    });
  }

  /** The live keyring serialized, for an activation bundle; Sealed while sealed. */
  exportKeyring(): Buffer {
    if (this.#state.type !== 'unsealed') throw new Sealed();
    return this.#state.keyring.serialize();
  }

  /**
   * True when `shares` combine to the root key (they open the stored keyring). A wrong or short
   * set answers false, never throws; an uninitialised node is NotInitialized.
   */
  verifyRootKeyShares(shares: readonly Buffer[]): Promise<boolean> {
    return this.#exclusive(async () => {
      await this.#requireConfig();
      const record = await this.#records.get(RecordName.keyring);
      if (record === undefined) throw new Internal('keyring record is missing');
      let rootKey: Buffer | undefined;
      try {
        rootKey = await combineShares(shares);
        if (rootKey.length !== KEY_BYTES) return false;
        Keyring.openWith(record, rootKey, this.#random).destroy();
        return true;
      } catch (e) {
        if (e instanceof InvalidRequest) return false;
        if (e instanceof CiphertextRejected && e.reason === RejectReason.authentication) return false;
        throw e;
      } finally {
        rootKey?.fill(0);
      }
    });
  }

  /** Takes ownership of `rootKey`: kept while unsealed, zeroed on failure. */
  async #openKeyring(rootKey: Buffer): Promise<void> {
    if (rootKey.length !== KEY_BYTES) {
      rootKey.fill(0);
      throw new InvalidRequest(INVALID_KEY);
    }
    const record = await this.#records.get(RecordName.keyring);
    if (record === undefined) throw new Internal('keyring record is missing');
    let keyring: Keyring;
    try {
      keyring = Keyring.openWith(record, rootKey, this.#random);
    } catch (e) {
      rootKey.fill(0);
      if (e instanceof CiphertextRejected && e.reason === RejectReason.authentication) {
        throw new InvalidRequest(INVALID_KEY, { cause: e });
      }
      throw e;
    }
    this.#state = { type: 'unsealed', keyring, rootKey };
    this.#emit({ type: 'unsealed' });
  }

  #sealNow(): void {
    const state = this.#state;
    this.#state = { type: 'sealed' };
    if (state.type === 'sealed') {
      state.attempt?.reset();
      return;
    }
    state.keyring.destroy();
    state.rootKey?.fill(0);
    this.#emit({ type: 'sealed' });
  }

  #newAttempt(config: SealConfig): ShareCollector {
    return new ShareCollector({
      required: config.secret_threshold,
      shareLength: shareLength(KEY_BYTES, config.secret_threshold),
      newNonce: this.#newNonce,
    });
  }

  #statusOf(config: SealConfig | undefined): SealStatus {
    const attempt = this.#state.type === 'sealed' ? this.#state.attempt : undefined;
    const progress = attempt?.progress ?? 0;
    return {
      type: 'shamir',
      initialized: config !== undefined,
      sealed: this.#state.type === 'sealed',
      t: config?.secret_threshold ?? 0,
      n: config?.secret_shares ?? 0,
      progress,
      nonce: progress > 0 && attempt !== undefined ? attempt.nonce : '',
    };
  }

  async #config(): Promise<SealConfig | undefined> {
    const record = await this.#records.get(RecordName.sealConfig);
    return record === undefined ? undefined : decodeSealConfig(record);
  }

  async #requireConfig(): Promise<SealConfig> {
    const config = await this.#config();
    if (config === undefined) throw new NotInitialized();
    return config;
  }

  #emit(event: SealEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (e) {
        this.#onListenerError(e);
      }
    }
  }

  /** Runs `fn` after every earlier call has settled, whatever their outcome. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}
