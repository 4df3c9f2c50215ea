/**
 * The keyring: term-numbered AES-256-GCM keys that encrypt everything behind the barrier. New
 * writes use the newest (active) term; a read finds its key by the term recorded in the ciphertext,
 * so values written before a rotation stay readable.
 *
 *   const ring = Keyring.generate();
 *   const ct = ring.encrypt(Buffer.from('v'), Buffer.from('logical/abc/key'));
 *   ring.decrypt(ct, Buffer.from('logical/abc/key'));   // Buffer 'v'
 *   ring.rotate();                                      // later writes use term 2
 *   const record = ring.sealWith(rootKey);              // what storage keeps
 *   Keyring.openWith(record, rootKey);                  // CiphertextRejected if rootKey is wrong
 *
 * Ciphertext: [version u8 = 1][term u32 BE][nonce 12][ciphertext][tag 16]. The 5-byte header is
 * authenticated along with the caller's AAD, so neither can be changed without failing the tag.
 */
import { randomBytes } from 'node:crypto';
import { Internal, Sealed } from '../core/errors.js';
import { gcmOpen, gcmSeal, KEY_BYTES, NONCE_BYTES, TAG_BYTES, type Random } from './aead.js';
import { CiphertextRejected, RejectReason } from './errors.js';

/** What the storage barrier needs; declared there identically, structural typing joins the two. */
export interface Cipher {
  encrypt(plain: Buffer, aad: Buffer): Buffer;
  decrypt(ct: Buffer, aad: Buffer): Buffer;
}

const CIPHERTEXT_VERSION = 1;
const HEADER_BYTES = 1 + 4;
const MAX_TERM = 0xffff_ffff;

/** Serialized keyring: [format u8 = 1][active term u32][count u32] then count x [term u32][key 32]. */
const KEYRING_FORMAT = 1;
const ENTRY_BYTES = 4 + KEY_BYTES;

/** Root-key-sealed keyring record: [version u8 = 1][nonce 12][gcm(serialized keyring)][tag 16]. */
const SEALED_VERSION = 1;
const SEALED_AAD = Buffer.from('tessera/keyring');

/** Nonces drawn from the random source at a time: one call per this many encryptions. */
const NONCE_BATCH = 256;

export class Keyring implements Cipher {
  readonly #keys: Map<number, Buffer>;
  readonly #random: Random;
  #active: number;
  #destroyed = false;
  #encryptions = 0;
  /** Random bytes not yet used as nonces (each nonce is used once, then never again). */
  #nonces: Buffer = Buffer.alloc(0);

  private constructor(keys: Map<number, Buffer>, active: number, random: Random) {
    this.#keys = keys;
    this.#active = active;
    this.#random = random;
  }

  /** A new keyring holding one random key as term 1. */
  static generate(random: Random = randomBytes): Keyring {
    return new Keyring(new Map([[1, Buffer.from(random(KEY_BYTES))]]), 1, random);
  }

  /** Inverse of serialize(); a malformed record is Internal (storage handed back garbage). */
  static deserialize(buf: Buffer, random: Random = randomBytes): Keyring {
    const bad = (why: string): Internal => new Internal(`keyring record is malformed: ${why}`);
    if (buf.length < 9 || buf.readUInt8(0) !== KEYRING_FORMAT) throw bad('unknown format');
    const active = buf.readUInt32BE(1);
    const count = buf.readUInt32BE(5);
    if (count < 1 || buf.length !== 9 + count * ENTRY_BYTES) throw bad('wrong length');
    const keys = new Map<number, Buffer>();
    let previous = 0;
    for (let i = 0; i < count; i++) {
      const at = 9 + i * ENTRY_BYTES;
      const term = buf.readUInt32BE(at);
      if (term <= previous) throw bad('terms out of order');
      previous = term;
      keys.set(term, Buffer.from(buf.subarray(at + 4, at + ENTRY_BYTES)));
    }
    if (!keys.has(active)) throw bad('active term has no key');
    return new Keyring(keys, active, random);
  }

  /** Opens a record made by sealWith(). A wrong root key fails the tag: CiphertextRejected. */
  static openWith(sealed: Buffer, rootKey: Buffer, random: Random = randomBytes): Keyring {
    if (sealed.length < 1 + NONCE_BYTES + TAG_BYTES || sealed.readUInt8(0) !== SEALED_VERSION) {
      throw new CiphertextRejected(RejectReason.malformed, 'sealed keyring record is malformed');
    }
    const nonce = sealed.subarray(1, 1 + NONCE_BYTES);
    const plain = gcmOpen(rootKey, nonce, sealed.subarray(1 + NONCE_BYTES), SEALED_AAD);
    try {
      return Keyring.deserialize(plain, random);
    } finally {
      plain.fill(0);
    }
  }

  /** Cheap structural check of a sealed record, for records received from elsewhere. */
  static isSealedRecord(sealed: Buffer): boolean {
    return sealed.length >= 1 + NONCE_BYTES + TAG_BYTES + 9 + ENTRY_BYTES && sealed.readUInt8(0) === SEALED_VERSION;
  }

  get activeTerm(): number {
    this.#checkLive();
    return this.#active;
  }

  /** Every term held, ascending. */
  get terms(): number[] {
    this.#checkLive();
    return [...this.#keys.keys()].sort((a, b) => a - b);
  }

  /** Encryptions under the active term since it became active in this process (sys/key-status). */
  get encryptions(): number {
    return this.#encryptions;
  }

  encrypt(plain: Buffer, aad: Buffer): Buffer {
    this.#encryptions++;
    return this.encryptUnder(this.#active, plain, aad);
  }

  /**
   * Encrypts under a given held term rather than the active one: the replicated keyring record
   * is sealed under the first term, which every node of a replication set holds.
   */
  encryptUnder(term: number, plain: Buffer, aad: Buffer): Buffer {
    const key = this.#keyFor(term);
    const head = Buffer.allocUnsafe(HEADER_BYTES + NONCE_BYTES);
    head.writeUInt8(CIPHERTEXT_VERSION, 0);
    head.writeUInt32BE(term, 1);
    this.#nextNonce().copy(head, HEADER_BYTES);
    const header = head.subarray(0, HEADER_BYTES);
    const nonce = head.subarray(HEADER_BYTES);
    return Buffer.concat([head, gcmSeal(key, nonce, plain, Buffer.concat([header, aad]))]);
  }

  /**
   * A fresh random nonce. Drawn from the random source NONCE_BATCH at a time (one call to the
   * CSPRNG instead of one per value); every slice is handed out exactly once.
   */
  #nextNonce(): Buffer {
    if (this.#nonces.length < NONCE_BYTES) this.#nonces = Buffer.from(this.#random(NONCE_BYTES * NONCE_BATCH));
    const nonce = this.#nonces.subarray(0, NONCE_BYTES);
    this.#nonces = this.#nonces.subarray(NONCE_BYTES);
    return nonce;
  }

  /** Throws as every use after `destroy()` does. */
  assertLive(): void {
    this.#checkLive();
  }

  decrypt(ct: Buffer, aad: Buffer): Buffer {
    this.#checkLive();
    if (ct.length < HEADER_BYTES + NONCE_BYTES + TAG_BYTES || ct.readUInt8(0) !== CIPHERTEXT_VERSION) {
      throw new CiphertextRejected(RejectReason.malformed, 'ciphertext is malformed');
    }
    const term = ct.readUInt32BE(1);
    const key = this.#keys.get(term);
    if (key === undefined) {
      throw new CiphertextRejected(RejectReason.unknownTerm, `ciphertext uses unknown keyring term ${term}`);
    }
    const header = ct.subarray(0, HEADER_BYTES);
    const nonce = ct.subarray(HEADER_BYTES, HEADER_BYTES + NONCE_BYTES);
    return gcmOpen(key, nonce, ct.subarray(HEADER_BYTES + NONCE_BYTES), Buffer.concat([header, aad]));
  }

  /**
   * Adds the next term and makes it active; returns it. `key` lets a caller persist the rotated
   * keyring (rotate a clone, seal, store) before applying the very same key to the live one.
   */
  rotate(key: Buffer = this.#random(KEY_BYTES)): number {
    this.#checkLive();
    if (key.length !== KEY_BYTES) throw new Internal(`keyring keys must be ${KEY_BYTES} bytes`);
    const term = Math.max(...this.#keys.keys()) + 1;
    if (term > MAX_TERM) throw new Internal('keyring term space exhausted');
    this.#keys.set(term, Buffer.from(key));
    this.#active = term;
    this.#encryptions = 0;
    return term;
  }

  /**
   * Takes every term of `other` this ring lacks, and its active term when newer: a secondary
   * follows its primary's rotation. A term both hold with different keys is Internal (the two
   * rings are not of one set) and changes nothing.
   */
  adopt(other: Keyring): void {
    this.#checkLive();
    const theirs = other.serialize();
    try {
      const incoming = Keyring.deserialize(theirs, this.#random);
      for (const term of incoming.terms) {
        const mine = this.#keys.get(term);
        if (mine !== undefined && !mine.equals(incoming.#keyFor(term))) {
          incoming.destroy();
          throw new Internal(`keyring term ${term} differs from the primary's`);
        }
      }
      for (const term of incoming.terms) if (!this.#keys.has(term)) this.#keys.set(term, Buffer.from(incoming.#keyFor(term)));
      if (incoming.activeTerm > this.#active) {
        this.#active = incoming.activeTerm;
        this.#encryptions = 0;
      }
      incoming.destroy();
    } finally {
      theirs.fill(0);
    }
  }

  clone(): Keyring {
    this.#checkLive();
    const keys = new Map([...this.#keys].map(([term, key]) => [term, Buffer.from(key)] as const));
    return new Keyring(keys, this.#active, this.#random);
  }

  /** The plaintext keyring. Secret: only ever stored through sealWith(). */
  serialize(): Buffer {
    this.#checkLive();
    const terms = this.terms;
    const out = Buffer.alloc(9 + terms.length * ENTRY_BYTES);
    out.writeUInt8(KEYRING_FORMAT, 0);
    out.writeUInt32BE(this.#active, 1);
    out.writeUInt32BE(terms.length, 5);
    terms.forEach((term, i) => {
      const at = 9 + i * ENTRY_BYTES;
      out.writeUInt32BE(term, at);
      this.#keyFor(term).copy(out, at + 4);
    });
    return out;
  }

  /** The keyring encrypted under `rootKey` (AAD "tessera/keyring"); safe to store. */
  sealWith(rootKey: Buffer): Buffer {
    const plain = this.serialize();
    try {
      const nonce = Buffer.from(this.#random(NONCE_BYTES));
      return Buffer.concat([Buffer.from([SEALED_VERSION]), nonce, gcmSeal(rootKey, nonce, plain, SEALED_AAD)]);
    } finally {
      plain.fill(0);
    }
  }

  /**
   * Zeroes the keys. Afterwards every use throws Sealed, so a reference kept past a seal can
   * never encrypt under a zeroed key.
   */
  destroy(): void {
    for (const key of this.#keys.values()) key.fill(0);
    this.#nonces = Buffer.alloc(0);
    this.#destroyed = true;
  }

  #checkLive(): void {
    if (this.#destroyed) throw new Sealed();
  }

  #keyFor(term: number): Buffer {
    this.#checkLive();
    const key = this.#keys.get(term);
    if (key === undefined) throw new Internal(`keyring has no key for term ${term}`);
    return key;
  }
}
