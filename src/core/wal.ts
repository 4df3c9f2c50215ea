/**
 * WAL entries: the unit DR replication streams. Pure codec and hash chain, no I/O.
 *
 *   const entry = sealEntry(prev.hash, { index: prev.index + 1n, epoch, time, ops });
 *   verifyChain(prev, [entry]);                       // throws WalChainBroken
 *   decodeEntry(encodeEntry(entry));                  // round trip; bad bytes throw WalCorrupt
 *
 * Ops carry ciphertext: values are encrypted once at the barrier, so every replica stores, hashes
 * and chains the same bytes. h(i) = SHA-256(h(i-1) || body(i)); the pair (i, h(i)) is a guard that
 * names one exact history. Index 0 with 32 zero bytes is the genesis guard.
 */
import { hash } from 'node:crypto';
import { ErrorCode, TesseraError } from './errors.js';

export type WalOp =
  | { readonly type: 'put'; readonly key: string; readonly value: Buffer }
  | { readonly type: 'del'; readonly key: string };

export interface WalEntry {
  readonly index: bigint;
  readonly epoch: number;
  /** Commit time, ms since the epoch. */
  readonly time: number;
  readonly ops: readonly WalOp[];
  readonly hash: Buffer;
}

export type WalBody = Omit<WalEntry, 'hash'>;

export interface Guard {
  readonly index: bigint;
  readonly hash: Buffer;
}

const HASH_LEN = 32;

export function genesisGuard(): Guard {
  return { index: 0n, hash: Buffer.alloc(HASH_LEN) };
}

const ENTRY_VERSION = 1;
const META_VERSION = 1;
const OP_PUT = 1;
const OP_DEL = 2;
const U64_MAX = (1n << 64n) - 1n;
const U32_MAX = 0xffffffff;

/** Stored or received WAL bytes that do not decode. */
export class WalCorrupt extends TesseraError {
  constructor(message: string) {
    super(ErrorCode.internal, `corrupt WAL record: ${message}`);
  }
}

export const ChainFault = { gap: 'gap', mismatch: 'mismatch' } as const;
export type ChainFault = (typeof ChainFault)[keyof typeof ChainFault];

/** Entries that do not continue the given guard: the receiver shares no history with them. */
export class WalChainBroken extends TesseraError {
  constructor(
    readonly fault: ChainFault,
    /** The index of the first entry that does not follow. */
    readonly index: bigint,
  ) {
    super(
      ErrorCode.invalidRequest,
      fault === ChainFault.gap ? `WAL gap before index ${index}` : `WAL hash mismatch at index ${index}`,
    );
  }
}

/** The requested WAL index was deleted by the retention bound (or predates a snapshot install). */
export class WalNotRetained extends TesseraError {
  constructor(
    readonly requested: bigint,
    readonly firstRetained: bigint,
  ) {
    super(ErrorCode.invalidRequest, `WAL index ${requested} is no longer retained (first retained ${firstRetained})`);
  }
}

class Writer {
  private readonly parts: Buffer[] = [];
  u8(n: number): void {
    this.parts.push(Buffer.of(n));
  }
  u32(n: number): void {
    if (!Number.isInteger(n) || n < 0 || n > U32_MAX) throw new RangeError(`not a u32: ${n}`);
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    this.parts.push(b);
  }
  u64(n: bigint): void {
    if (n < 0n || n > U64_MAX) throw new RangeError(`not a u64: ${n}`);
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(n);
    this.parts.push(b);
  }
  raw(b: Uint8Array): void {
    this.parts.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

class Reader {
  private at = 0;
  constructor(private readonly buf: Buffer) {}
  private need(n: number): void {
    if (this.at + n > this.buf.length) throw new WalCorrupt('truncated');
  }
  u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.at++);
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.at);
    this.at += 4;
    return v;
  }
  u64(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64BE(this.at);
    this.at += 8;
    return v;
  }
  raw(n: number): Buffer {
    this.need(n);
    const v = Buffer.from(this.buf.subarray(this.at, this.at + n));
    this.at += n;
    return v;
  }
  bytes(): Buffer {
    return this.raw(this.u32());
  }
  text(): string {
    try {
      return utf8.decode(this.bytes());
    } catch (e) {
      if (e instanceof WalCorrupt) throw e;
      throw new WalCorrupt('key is not UTF-8');
    }
  }
  end(): void {
    if (this.at !== this.buf.length) throw new WalCorrupt('trailing bytes');
  }
}

const BODY_HEAD = 1 + 8 + 4 + 8 + 4;

/**
 * The deterministic body bytes: version, index, epoch, time, ops (length-prefixed), after `lead`
 * and followed by `trailer` free bytes (zeroed) that the caller may fill. Sized first and written
 * in place: the chain hash then takes one one-shot SHA-256 over the previous hash in the lead and
 * the body, without a Hash object or a second copy of the body.
 */
function encodeBodyInto(e: WalBody, lead: number, trailer: number): Buffer {
  if (!Number.isSafeInteger(e.time) || e.time < 0) throw new RangeError(`bad WAL time ${e.time}`);
  if (e.index < 0n || e.index > U64_MAX) throw new RangeError(`not a u64: ${e.index}`);
  if (!Number.isInteger(e.epoch) || e.epoch < 0 || e.epoch > U32_MAX) throw new RangeError(`not a u32: ${e.epoch}`);
  if (e.ops.length > U32_MAX) throw new RangeError(`not a u32: ${e.ops.length}`);
  const keyLens = e.ops.map((op) => Buffer.byteLength(op.key, 'utf8'));
  let size = BODY_HEAD;
  e.ops.forEach((op, i) => {
    size += 1 + 4 + (keyLens[i] ?? 0) + (op.type === 'put' ? 4 + op.value.length : 0);
  });
  const buf = Buffer.allocUnsafe(lead + size + trailer);
  let at = buf.writeUInt8(ENTRY_VERSION, lead);
  at = buf.writeBigUInt64BE(e.index, at);
  at = buf.writeUInt32BE(e.epoch, at);
  at = buf.writeBigUInt64BE(BigInt(e.time), at);
  at = buf.writeUInt32BE(e.ops.length, at);
  e.ops.forEach((op, i) => {
    const keyLen = keyLens[i] ?? 0;
    at = buf.writeUInt8(op.type === 'put' ? OP_PUT : OP_DEL, at);
    at = buf.writeUInt32BE(keyLen, at);
    at += buf.write(op.key, at, keyLen, 'utf8');
    if (op.type === 'put') {
      if (op.value.length > U32_MAX) throw new RangeError(`not a u32: ${op.value.length}`);
      at = buf.writeUInt32BE(op.value.length, at);
      at += op.value.copy(buf, at);
    }
  });
  buf.fill(0, at);
  return buf;
}

/** The deterministic body bytes: version, index, epoch, time, ops (length-prefixed). */
export function encodeBody(e: WalBody): Buffer {
  return encodeBodyInto(e, 0, 0);
}

/** SHA-256(prevHash || body) of a buffer laid out as HASH_LEN lead bytes, the body, `trailer` bytes. */
function chainHashIn(prevHash: Uint8Array, buf: Buffer, trailer: number): Buffer {
  // A guard's hash is always HASH_LEN bytes; any other length is hashed as given (it matches nothing).
  if (prevHash.length !== HASH_LEN) return hash('sha256', Buffer.concat([prevHash, buf.subarray(HASH_LEN, buf.length - trailer)]), 'buffer');
  buf.set(prevHash, 0);
  return hash('sha256', buf.subarray(0, buf.length - trailer), 'buffer');
}

export function chainHash(prevHash: Uint8Array, body: WalBody): Buffer {
  return chainHashIn(prevHash, encodeBodyInto(body, HASH_LEN, 0), 0);
}

/** The entry that follows `prevHash`, with its chained hash. */
export function sealEntry(prevHash: Uint8Array, body: WalBody): WalEntry {
  return { ...body, hash: chainHash(prevHash, body) };
}

/** Stored form: body || hash. */
export function encodeEntry(e: WalEntry): Buffer {
  if (e.hash.length !== HASH_LEN) throw new RangeError('WAL hash must be 32 bytes');
  const rec = encodeBodyInto(e, 0, HASH_LEN);
  e.hash.copy(rec, rec.length - HASH_LEN);
  return rec;
}

/** sealEntry and encodeEntry at once, encoding the body a single time (the commit path's form). */
export function sealRecord(prevHash: Uint8Array, body: WalBody): { entry: WalEntry; record: Buffer } {
  const buf = encodeBodyInto(body, HASH_LEN, HASH_LEN);
  const hash = chainHashIn(prevHash, buf, HASH_LEN);
  const record = buf.subarray(HASH_LEN);
  hash.copy(record, record.length - HASH_LEN);
  return { entry: { ...body, hash }, record };
}

/** The chained hash of a stored entry, without decoding it. */
export function storedHash(rec: Buffer): Buffer {
  if (rec.length < HASH_LEN) throw new WalCorrupt('truncated');
  return Buffer.from(rec.subarray(rec.length - HASH_LEN));
}

export function decodeEntry(rec: Buffer): WalEntry {
  if (rec.length < HASH_LEN + 1) throw new WalCorrupt('truncated');
  const r = new Reader(rec.subarray(0, rec.length - HASH_LEN));
  const version = r.u8();
  if (version !== ENTRY_VERSION) throw new WalCorrupt(`unknown version ${version}`);
  const index = r.u64();
  const epoch = r.u32();
  const time = r.u64();
  if (time > BigInt(Number.MAX_SAFE_INTEGER)) throw new WalCorrupt('time out of range');
  const count = r.u32();
  const ops: WalOp[] = [];
  for (let i = 0; i < count; i++) {
    const type = r.u8();
    const key = r.text();
    if (type === OP_PUT) ops.push({ type: 'put', key, value: r.bytes() });
    else if (type === OP_DEL) ops.push({ type: 'del', key });
    else throw new WalCorrupt(`unknown op type ${type}`);
  }
  r.end();
  return { index, epoch, time: Number(time), ops, hash: storedHash(rec) };
}

/** Throws WalChainBroken unless `entries` continue `prev` one index at a time with valid hashes. */
export function verifyChain(prev: Guard, entries: readonly WalEntry[]): void {
  verifiedRecords(prev, entries);
}

/**
 * verifyChain, returning each entry's stored form (body || hash) as encodeEntry would: a
 * secondary checks and stores the entries it receives with one encoding of each body.
 */
export function verifiedRecords(prev: Guard, entries: readonly WalEntry[]): Buffer[] {
  const records: Buffer[] = [];
  let at = prev;
  for (const e of entries) {
    if (e.index !== at.index + 1n) throw new WalChainBroken(ChainFault.gap, at.index + 1n);
    if (e.hash.length !== HASH_LEN) throw new WalChainBroken(ChainFault.mismatch, e.index);
    const buf = encodeBodyInto(e, HASH_LEN, HASH_LEN);
    if (!chainHashIn(at.hash, buf, HASH_LEN).equals(e.hash)) throw new WalChainBroken(ChainFault.mismatch, e.index);
    const record = buf.subarray(HASH_LEN);
    e.hash.copy(record, record.length - HASH_LEN);
    records.push(record);
    at = e;
  }
  return records;
}

/**
 * The WAL's own bookkeeping. Retained entries are first..last (none when first = last + 1);
 * `base` is the guard just before `first`, kept so a stream can resume exactly at the boundary.
 */
export interface WalMeta {
  readonly first: bigint;
  readonly last: bigint;
  readonly lastHash: Buffer;
  readonly baseHash: Buffer;
  readonly bytes: number;
  readonly epoch: number;
}

export function genesisMeta(epoch = 0): WalMeta {
  return { first: 1n, last: 0n, lastHash: Buffer.alloc(HASH_LEN), baseHash: Buffer.alloc(HASH_LEN), bytes: 0, epoch };
}

export function encodeMeta(m: WalMeta): Buffer {
  const w = new Writer();
  w.u8(META_VERSION);
  w.u64(m.first);
  w.u64(m.last);
  w.raw(m.lastHash);
  w.raw(m.baseHash);
  w.u64(BigInt(m.bytes));
  w.u32(m.epoch);
  return w.done();
}

export function decodeMeta(rec: Buffer): WalMeta {
  const r = new Reader(rec);
  const version = r.u8();
  if (version !== META_VERSION) throw new WalCorrupt(`unknown meta version ${version}`);
  const first = r.u64();
  const last = r.u64();
  const lastHash = r.raw(HASH_LEN);
  const baseHash = r.raw(HASH_LEN);
  const bytes = Number(r.u64());
  const epoch = r.u32();
  r.end();
  if (first > last + 1n) throw new WalCorrupt('meta first > last + 1');
  return { first, last, lastHash, baseHash, bytes, epoch };
}
