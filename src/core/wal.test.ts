import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  ChainFault,
  WalChainBroken,
  WalCorrupt,
  decodeEntry,
  decodeMeta,
  encodeBody,
  encodeEntry,
  encodeMeta,
  genesisGuard,
  sealEntry,
  sealRecord,
  verifiedRecords,
  verifyChain,
  type Guard,
  type WalEntry,
  type WalOp,
} from './wal.js';

function chain(n: number): WalEntry[] {
  const out: WalEntry[] = [];
  let prev = genesisGuard();
  for (let i = 1; i <= n; i++) {
    const e = sealEntry(prev.hash, { index: BigInt(i), epoch: 1, time: 1000 + i, ops: [{ type: 'put', key: `k${i}`, value: Buffer.from([i]) }] });
    out.push(e);
    prev = e;
  }
  return out;
}

const opArb: fc.Arbitrary<WalOp> = fc.oneof(
  fc.record({ type: fc.constant('put' as const), key: fc.string({ minLength: 1, unit: 'grapheme' }), value: fc.uint8Array({ maxLength: 64 }).map((u) => Buffer.from(u)) }),
  fc.record({ type: fc.constant('del' as const), key: fc.string({ minLength: 1, unit: 'grapheme' }) }),
);

describe('WAL codec', () => {
  it('round-trips any entry (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.nat({ max: 0xffffffff }),
        fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        fc.array(opArb, { maxLength: 5 }),
        (index, epoch, time, ops) => {
          const e = sealEntry(Buffer.alloc(32, 1), { index, epoch, time, ops });
          expect(decodeEntry(encodeEntry(e))).toEqual(e);
        },
      ),
    );
  });

  it('sealRecord gives the entry sealEntry gives and the record encodeEntry gives (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.nat({ max: Number.MAX_SAFE_INTEGER }), fc.array(opArb, { maxLength: 5 }), (index, time, ops) => {
        const body = { index, epoch: 7, time, ops };
        const { entry, record } = sealRecord(Buffer.alloc(32, 2), body);
        expect(entry).toEqual(sealEntry(Buffer.alloc(32, 2), body));
        expect(record).toEqual(encodeEntry(entry));
        expect(decodeEntry(record)).toEqual(entry);
      }),
    );
  });

  it('lays the body out as version, u64 index, u32 epoch, u64 time, u32 count, then type, u32-prefixed key and value', () => {
    const body = encodeBody({ index: 258n, epoch: 3, time: 5, ops: [{ type: 'put', key: 'ké', value: Buffer.from([9, 8]) }, { type: 'del', key: 'x' }] });
    const u32 = (n: number): number[] => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
    const u64 = (n: number): number[] => [0, 0, 0, 0, ...u32(n)];
    const expected = [1, ...u64(258), ...u32(3), ...u64(5), ...u32(2), 1, ...u32(3), ...Buffer.from('ké'), ...u32(2), 9, 8, 2, ...u32(1), ...Buffer.from('x')];
    expect([...body]).toEqual(expected);
  });

  it('starts with a version byte and chains h(i) = SHA-256(h(i-1) || body)', () => {
    const [e1, e2] = chain(2) as [WalEntry, WalEntry];
    const body = encodeBody(e2);
    expect(body[0]).toBe(1);
    expect(e2.hash).toEqual(createHash('sha256').update(e1.hash).update(body).digest());
  });

  it('rejects corrupt bytes with WalCorrupt, never another error', () => {
    const rec = encodeEntry(chain(1)[0]!);
    const bad = [
      Buffer.alloc(0),
      rec.subarray(0, rec.length - 40),
      Buffer.concat([Buffer.of(9), rec.subarray(1)]),
      Buffer.concat([rec.subarray(0, rec.length - 32), Buffer.of(0), rec.subarray(rec.length - 32)]),
    ];
    for (const b of bad) expect(() => decodeEntry(b)).toThrow(WalCorrupt);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        try {
          decodeEntry(Buffer.from(bytes));
        } catch (e) {
          expect(e).toBeInstanceOf(WalCorrupt);
        }
      }),
    );
  });

  it('rejects a key that is not UTF-8', () => {
    const rec = encodeEntry(sealEntry(Buffer.alloc(32), { index: 1n, epoch: 0, time: 0, ops: [{ type: 'del', key: 'ab' }] }));
    const at = rec.indexOf(Buffer.from('ab'));
    rec[at] = 0xff;
    expect(() => decodeEntry(rec)).toThrow(WalCorrupt);
  });

  it('round-trips the meta record', () => {
    const m = { first: 5n, last: 9n, lastHash: Buffer.alloc(32, 2), baseHash: Buffer.alloc(32, 3), bytes: 1234, epoch: 7 };
    expect(decodeMeta(encodeMeta(m))).toEqual(m);
    expect(() => decodeMeta(encodeMeta(m).subarray(3))).toThrow(WalCorrupt);
  });
});

describe('verifyChain', () => {
  it('accepts a chain that continues the guard', () => {
    const entries = chain(5);
    expect(() => verifyChain(genesisGuard(), entries)).not.toThrow();
    expect(() => verifyChain(entries[1]!, entries.slice(2))).not.toThrow();
  });

  it('names a gap', () => {
    const entries = chain(5);
    const err = (() => {
      try {
        verifyChain(genesisGuard(), [entries[0]!, entries[2]!]);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(WalChainBroken);
    expect((err as WalChainBroken).fault).toBe(ChainFault.gap);
    expect((err as WalChainBroken).index).toBe(2n);
  });

  it('names a hash mismatch: tampered op, or a guard from another history', () => {
    const entries = chain(3);
    const tampered = { ...entries[1]!, ops: [{ type: 'del' as const, key: 'k2' }] };
    expect(() => verifyChain(genesisGuard(), [entries[0]!, tampered, entries[2]!])).toThrow(
      expect.objectContaining({ fault: ChainFault.mismatch, index: 2n }),
    );
    const forked = { index: 1n, hash: Buffer.alloc(32, 9) };
    expect(() => verifyChain(forked, entries.slice(1))).toThrow(expect.objectContaining({ fault: ChainFault.mismatch, index: 2n }));
    // A guard hash of another length matches nothing, as before the one-shot hashing.
    expect(() => verifyChain({ index: 1n, hash: Buffer.alloc(31, 9) }, entries.slice(1))).toThrow(expect.objectContaining({ fault: ChainFault.mismatch, index: 2n }));
    const short = { ...entries[0]!, hash: entries[0]!.hash.subarray(0, 31) };
    expect(() => verifyChain(genesisGuard(), [short])).toThrow(expect.objectContaining({ fault: ChainFault.mismatch, index: 1n }));
  });

  it('verifiedRecords gives the stored record of each entry, as encodeEntry does (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.array(opArb, { maxLength: 4 }), { minLength: 1, maxLength: 5 }), (opsList) => {
        const entries: WalEntry[] = [];
        let prev: Guard = { index: 41n, hash: Buffer.alloc(32, 3) };
        for (const ops of opsList) {
          const e = sealEntry(prev.hash, { index: prev.index + 1n, epoch: 2, time: 5, ops });
          entries.push(e);
          prev = e;
        }
        const records = verifiedRecords({ index: 41n, hash: Buffer.alloc(32, 3) }, entries);
        expect(records).toEqual(entries.map(encodeEntry));
        expect(records.map(decodeEntry)).toEqual(entries);
      }),
    );
  });
});
