/**
 * The one suite every Backend passes (ARCHITECTURE.md: engines behind a narrow interface, proven
 * by a shared contract). Call it from a colocated test with a factory that opens a fresh, empty
 * backend each time:
 *
 *   runBackendContract('memory', async () => {
 *     const backend = new MemoryBackend();
 *     return { backend, cleanup: () => backend.close() };
 *   });
 *
 * `cleanup` must tolerate a backend that the test already closed.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { MAX_KEY_BYTES } from '../../src/storage/contract.js';
import { prefixEnd } from '../../src/storage/backend.js';
import type { Backend } from '../../src/storage/backend.js';
import { buf, collect, del, keysOf, modelRange, put, utf8Compare, within } from './backend-contract-support.js';

export type BackendFactory = () => Promise<{ backend: Backend; cleanup: () => Promise<void> }>;

export function runBackendContract(name: string, factory: BackendFactory): void {
  describe(`Backend contract: ${name}`, () => {
    let backend: Backend;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ backend, cleanup } = await factory());
    });

    afterEach(async () => {
      await cleanup();
    });

    describe('point operations', () => {
      it('puts, gets and deletes', async () => {
        await backend.batch([put('k', 'v1')], { sync: true });
        expect((await backend.get('k'))?.toString()).toBe('v1');
        await backend.batch([put('k', 'v2')], { sync: false });
        expect((await backend.get('k'))?.toString()).toBe('v2');
        await backend.batch([del('k')], { sync: true });
        expect(await backend.get('k')).toBeUndefined();
      });

      it('returns undefined for a missing key, and deleting a missing key is harmless', async () => {
        expect(await backend.get('never/written')).toBeUndefined();
        await backend.batch([del('never/written')], { sync: true });
        expect(await backend.get('never/written')).toBeUndefined();
      });

      it('stores an empty value as an empty Buffer, distinct from a missing key', async () => {
        await backend.batch([put('empty', Buffer.alloc(0))], { sync: true });
        const v = await backend.get('empty');
        expect(Buffer.isBuffer(v)).toBe(true);
        expect(v?.length).toBe(0);
        expect(await collect(backend.iterate({}))).toEqual([['empty', '']]);
      });

      it('round-trips arbitrary bytes exactly', async () => {
        const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
        await backend.batch([put('bin', bytes)], { sync: true });
        expect((await backend.get('bin'))?.equals(bytes)).toBe(true);
      });

      it('holds keys of any length (the contract allows 2048 bytes; older data may hold longer), in key order', async () => {
        // Random letters: no compressor shrinks them, as no index may (PostgreSQL's btree entry
        // refused such a key past 2704 bytes before schema version 2).
        const long = (n: number): string => 'k/' + randomBytes(n).toString('base64url').slice(0, n - 2);
        const keys = [long(MAX_KEY_BYTES + 11), long(3_000), long(9_000)];
        const shared = keys[2] as string;
        keys.push(`${shared}/child`, shared.slice(0, -1), `${shared.slice(0, -1)}~`);
        await backend.batch(keys.map((k, i) => put(k, String(i))), { sync: true });
        for (const [i, k] of keys.entries()) expect((await backend.get(k))?.toString()).toBe(String(i));
        expect(await keysOf(backend.iterate({}))).toEqual([...keys].sort(utf8Compare));
        expect(await keysOf(backend.iterate({ gt: shared, lte: `${shared}/child` }))).toEqual([`${shared}/child`]);
        expect(await keysOf(backend.iterate({ reverse: true, lt: shared, gte: shared.slice(0, -1) }))).toEqual([shared.slice(0, -1)]);
        await backend.batch([put(shared, 'again'), del(keys[0] as string)], { sync: true });
        expect((await backend.get(shared))?.toString()).toBe('again');
        expect(await backend.get(keys[0] as string)).toBeUndefined();
      });

      it('accepts an empty batch', async () => {
        await backend.batch([], { sync: true });
        expect(await keysOf(backend.iterate({}))).toEqual([]);
      });
    });

    describe('batches', () => {
      it('makes every op of a batch visible once it resolves, applying ops in order', async () => {
        await backend.batch([put('gone', 'x'), put('stays', 'old')], { sync: true });
        await backend.batch(
          [put('a', '1'), put('b', '2'), del('gone'), put('stays', 'new'), put('c', 'tmp'), del('c'), put('d', 'x'), put('d', 'y')],
          { sync: true },
        );
        expect(await collect(backend.iterate({}))).toEqual([
          ['a', '1'],
          ['b', '2'],
          ['d', 'y'],
          ['stays', 'new'],
        ]);
      });

      it('is atomic to concurrent readers: they see none or all of a batch', async () => {
        const n = 300;
        const ops = Array.from({ length: n }, (_, i) => put(`atomic/${String(i).padStart(4, '0')}`, 'v'));
        const write = backend.batch(ops, { sync: true });
        const seen = new Set<number>();
        const deadline = Date.now() + 10_000;
        for (;;) {
          const count = (await keysOf(backend.iterate({ gte: 'atomic/', lt: prefixEnd('atomic/') }))).length;
          seen.add(count);
          if (count === n || Date.now() > deadline) break;
        }
        await write;
        expect([...seen].every((c) => c === 0 || c === n)).toBe(true);
        expect(seen.has(n)).toBe(true);
      });

      it('does not keep a reference to the caller’s value Buffer', async () => {
        const value = buf('original');
        await backend.batch([put('k', value)], { sync: true });
        value.fill(0x7a);
        expect((await backend.get('k'))?.toString()).toBe('original');
      });
    });

    describe('ordering', () => {
      // JS sorts by UTF-16 code units, which differs from UTF-8 bytes above U+D7FF:
      // '\uff5a' (EF BD 9A) sorts before '😀' (F0 9F 98 80) in UTF-8 but after it in UTF-16.
      const keys = [
        'a',
        'a/',
        'a/b',
        'a/b/c',
        'a.',
        'a0',
        'aa',
        'B',
        'b',
        'z',
        '\u007f',
        'é',
        '中',
        '\uff5a',
        '\uffff',
        '😀',
        'a/\uffff',
        'a/中',
      ];

      it('iterates in UTF-8 byte order of keys', async () => {
        await backend.batch(keys.map((k) => put(k, k)), { sync: true });
        const expected = [...keys].sort(utf8Compare);
        // Spot-check that the expectation itself is byte order, not JS order.
        expect(expected.indexOf('\uff5a')).toBeLessThan(expected.indexOf('😀'));
        expect(expected.indexOf('\uffff')).toBeLessThan(expected.indexOf('😀'));
        expect(expected.slice(0, 8)).toEqual(['B', 'a', 'a.', 'a/', 'a/b', 'a/b/c', 'a/中', 'a/\uffff']);
        expect(await keysOf(backend.iterate({}))).toEqual(expected);
        expect(await keysOf(backend.iterate({ reverse: true }))).toEqual([...expected].reverse());
      });

      it('selects exactly the keys under a prefix with [prefix, prefixEnd(prefix))', async () => {
        // BMP characters below U+FFFF only: prefixEnd appends '\uffff' (EF BF BF), so a key with
        // '\uffff' or an astral character (F0..F4 lead byte) right after the prefix sorts past it.
        const under = ['logical/', 'logical/x', 'logical/x/y', 'logical/é', 'logical/中/z', 'logical/\ufffe'];
        const outside = ['logica', 'logical', 'logical0', 'logical.', 'logicam', 'm', 'a'];
        await backend.batch([...under, ...outside].map((k) => put(k, 'v')), { sync: true });
        const got = await keysOf(backend.iterate({ gte: 'logical/', lt: prefixEnd('logical/') }));
        expect(got).toEqual([...under].sort(utf8Compare));
        const rev = await keysOf(
          backend.iterate({ gte: 'logical/', lt: prefixEnd('logical/'), reverse: true }),
        );
        expect(rev).toEqual([...under].sort(utf8Compare).reverse());
      });
    });

    describe('ranges', () => {
      const ten = Array.from({ length: 10 }, (_, i) => `k${i}`);
      beforeEach(async () => {
        await backend.batch(ten.map((k) => put(k, `v-${k}`)), { sync: true });
      });

      it('honours gte/gt/lte/lt bounds', async () => {
        expect(await keysOf(backend.iterate({ gte: 'k3', lt: 'k6' }))).toEqual(['k3', 'k4', 'k5']);
        expect(await keysOf(backend.iterate({ gt: 'k3', lte: 'k6' }))).toEqual(['k4', 'k5', 'k6']);
        expect(await keysOf(backend.iterate({ gt: 'k8' }))).toEqual(['k9']);
        expect(await keysOf(backend.iterate({ lt: 'k1' }))).toEqual(['k0']);
        expect(await keysOf(backend.iterate({ gte: 'k35', lte: 'k5' }))).toEqual(['k4', 'k5']);
        expect(await keysOf(backend.iterate({ gte: 'k6', lt: 'k3' }))).toEqual([]);
        expect(await keysOf(backend.iterate({ gte: 'l' }))).toEqual([]);
      });

      it('yields values with their keys', async () => {
        expect(await collect(backend.iterate({ gte: 'k2', lte: 'k3' }))).toEqual([
          ['k2', 'v-k2'],
          ['k3', 'v-k3'],
        ]);
      });

      it('honours limit, applied after direction', async () => {
        expect(await keysOf(backend.iterate({ limit: 3 }))).toEqual(['k0', 'k1', 'k2']);
        expect(await keysOf(backend.iterate({ limit: 3, reverse: true }))).toEqual(['k9', 'k8', 'k7']);
        expect(await keysOf(backend.iterate({ gt: 'k2', lt: 'k8', limit: 2, reverse: true }))).toEqual([
          'k7',
          'k6',
        ]);
        expect(await keysOf(backend.iterate({ limit: 0 }))).toEqual([]);
        expect(await keysOf(backend.iterate({ limit: 100 }))).toEqual(ten);
      });

      it('iterates in reverse within bounds', async () => {
        expect(await keysOf(backend.iterate({ gte: 'k3', lt: 'k6', reverse: true }))).toEqual([
          'k5',
          'k4',
          'k3',
        ]);
      });

      it('stops cleanly when the consumer breaks early, leaving the backend usable', async () => {
        const seen: string[] = [];
        for await (const [k] of backend.iterate({})) {
          seen.push(k);
          if (seen.length === 3) break;
        }
        expect(seen).toEqual(['k0', 'k1', 'k2']);
        // An explicit return() must settle, not hang on an iterator that was never released.
        const it = backend.iterate({ reverse: true })[Symbol.asyncIterator]();
        expect((await it.next()).value?.[0]).toBe('k9');
        await within(5_000, Promise.resolve(it.return?.()), 'iterator return()');
        await backend.batch([put('k99', 'x')], { sync: true });
        expect(await keysOf(backend.iterate({ gt: 'k9' }))).toEqual(['k99']);
      });

      it('matches a reference model on random keys, batches and ranges', async () => {
        const alphabet = ['a', 'b', '/', '.', '0', 'é', '中', '\uffff', '😀'];
        const key = fc.string({ unit: fc.constantFrom(...alphabet), minLength: 1, maxLength: 4 });
        const op = fc.oneof(
          fc.record({ type: fc.constant('put' as const), key, value: fc.string({ maxLength: 3 }) }),
          fc.record({ type: fc.constant('del' as const), key }),
        );
        const range = fc.record(
          {
            gte: key,
            gt: key,
            lt: key,
            lte: key,
            limit: fc.nat({ max: 12 }),
            reverse: fc.boolean(),
          },
          { requiredKeys: [] },
        );
        await fc.assert(
          fc.asyncProperty(fc.array(fc.array(op, { maxLength: 8 }), { maxLength: 6 }), range, async (batches, r) => {
            // Each run starts from the ten keys of beforeEach: clear them and anything earlier runs wrote.
            const existing = await keysOf(backend.iterate({}));
            await backend.batch(existing.map(del), { sync: false });
            const model = new Map<string, string>();
            for (const b of batches) {
              await backend.batch(
                b.map((o) => (o.type === 'put' ? put(o.key, o.value) : del(o.key))),
                { sync: false },
              );
              for (const o of b) {
                if (o.type === 'put') model.set(o.key, o.value);
                else model.delete(o.key);
              }
            }
            expect(await collect(backend.iterate(r))).toEqual(modelRange(model, r));
            for (const k of model.keys()) expect((await backend.get(k))?.toString()).toBe(model.get(k));
          }),
          { numRuns: 60 },
        );
      });
    });

    describe('returned values are copies', () => {
      it('mutating a Buffer from get or iterate does not change the store', async () => {
        await backend.batch([put('a', 'alpha'), put('b', 'beta')], { sync: true });
        const got = await backend.get('a');
        got?.fill(0x21);
        for await (const [, v] of backend.iterate({})) v.fill(0x21);
        expect(await collect(backend.iterate({}))).toEqual([
          ['a', 'alpha'],
          ['b', 'beta'],
        ]);
      });

      it('mutating a Buffer from a snapshot does not change the snapshot', async () => {
        await backend.batch([put('a', 'alpha')], { sync: true });
        const snap = await backend.snapshot();
        try {
          (await snap.get('a'))?.fill(0x21);
          for await (const [, v] of snap.iterate({})) v.fill(0x21);
          expect((await snap.get('a'))?.toString()).toBe('alpha');
        } finally {
          await snap.close();
        }
      });
    });

    describe('snapshots', () => {
      it('hides writes made after the snapshot, which stay visible outside it', async () => {
        await backend.batch([put('a', '1'), put('c', 'keep-then-delete')], { sync: true });
        const snap = await backend.snapshot();
        try {
          await backend.batch([put('a', '2'), put('b', 'new'), del('c')], { sync: true });

          expect((await snap.get('a'))?.toString()).toBe('1');
          expect(await snap.get('b')).toBeUndefined();
          expect((await snap.get('c'))?.toString()).toBe('keep-then-delete');
          expect(await collect(snap.iterate({}))).toEqual([
            ['a', '1'],
            ['c', 'keep-then-delete'],
          ]);
          expect(await keysOf(snap.iterate({ gt: 'a', reverse: true }))).toEqual(['c']);

          expect((await backend.get('a'))?.toString()).toBe('2');
          expect((await backend.get('b'))?.toString()).toBe('new');
          expect(await backend.get('c')).toBeUndefined();
          expect(await collect(backend.iterate({}))).toEqual([
            ['a', '2'],
            ['b', 'new'],
          ]);
        } finally {
          await snap.close();
        }
      });

      it('keeps independent snapshots at their own points in time', async () => {
        await backend.batch([put('v', '1')], { sync: true });
        const s1 = await backend.snapshot();
        await backend.batch([put('v', '2')], { sync: true });
        const s2 = await backend.snapshot();
        await backend.batch([put('v', '3')], { sync: true });
        try {
          expect((await s1.get('v'))?.toString()).toBe('1');
          expect((await s2.get('v'))?.toString()).toBe('2');
          expect((await backend.get('v'))?.toString()).toBe('3');
        } finally {
          await s1.close();
          await s2.close();
        }
      });

      it('is unaffected by writes made while it is being iterated', async () => {
        await backend.batch(
          Array.from({ length: 50 }, (_, i) => put(`s/${String(i).padStart(2, '0')}`, 'old')),
          { sync: true },
        );
        const snap = await backend.snapshot();
        try {
          const seen: Array<[string, string]> = [];
          let i = 0;
          for await (const [k, v] of snap.iterate({ gte: 's/', lt: prefixEnd('s/') })) {
            seen.push([k, v.toString()]);
            if (i++ === 0) {
              await backend.batch(
                [put('s/00a', 'inserted'), del('s/30'), put('s/49', 'new')],
                { sync: true },
              );
            }
          }
          expect(seen).toHaveLength(50);
          expect(seen.every(([, v]) => v === 'old')).toBe(true);
        } finally {
          await snap.close();
        }
      });

      it('closes, and the backend keeps working afterwards', async () => {
        const snap = await backend.snapshot();
        await within(5_000, snap.close(), 'snapshot close');
        await backend.batch([put('after', 'x')], { sync: true });
        expect((await backend.get('after'))?.toString()).toBe('x');
      });
    });

    describe('close', () => {
      it('resolves, and writes after close reject', async () => {
        await backend.batch([put('k', 'v')], { sync: true });
        await within(5_000, backend.close(), 'backend close');
        await expect(backend.batch([put('k2', 'v')], { sync: true })).rejects.toThrow();
      });
    });
  });
}
