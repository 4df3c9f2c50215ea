import type { WalOp } from '../core/wal.js';
import { DEFAULT_READ_CACHE, ReadCache, readCacheLimits } from './read-cache.js';

const b = (s: string): Buffer => Buffer.from(s);
const put = (key: string, value: string): WalOp => ({ type: 'put', key, value: b(value) });

/** A loader that counts its calls and answers from `data`. */
function source(data: Map<string, Buffer>) {
  const calls: string[] = [];
  return {
    calls,
    load: (key: string) => async () => {
      calls.push(key);
      return data.get(key);
    },
  };
}

describe('ReadCache', () => {
  it('serves a second read from memory, absence included', async () => {
    const data = new Map([['a', b('1')]]);
    const src = source(data);
    const cache = new ReadCache();
    expect((await cache.read('a', src.load('a')))?.toString()).toBe('1');
    expect((await cache.read('a', src.load('a')))?.toString()).toBe('1');
    expect(await cache.read('none', src.load('none'))).toBeUndefined();
    expect(await cache.read('none', src.load('none'))).toBeUndefined();
    expect(src.calls).toEqual(['a', 'none']);
  });

  it('takes the new value of a cached key from each durable batch', async () => {
    const src = source(new Map([['a', b('1')]]));
    const cache = new ReadCache();
    await cache.read('a', src.load('a'));
    await cache.read('gone', src.load('gone'));
    cache.applied([put('a', '2'), put('gone', 'now'), put('uncached', 'x')]);
    expect((await cache.read('a', src.load('a')))?.toString()).toBe('2');
    expect((await cache.read('gone', src.load('gone')))?.toString()).toBe('now');
    cache.applied([{ type: 'del', key: 'a' }]);
    expect(await cache.read('a', src.load('a'))).toBeUndefined();
    expect(src.calls).toEqual(['a', 'gone']);
    // Writes do not fill: a key first seen in a batch is read from storage when asked for.
    expect(cache.size).toBe(2);
  });

  it('does not keep what a read returned if a batch that wrote the key became durable meanwhile', async () => {
    const cache = new ReadCache();
    let release!: (v: Buffer) => void;
    const reading = cache.read('k', () => new Promise<Buffer>((r) => (release = r)));
    cache.applied([put('k', 'new')]);
    release(b('old'));
    expect((await reading)?.toString()).toBe('old');
    const src = source(new Map([['k', b('new')]]));
    expect((await cache.read('k', src.load('k')))?.toString()).toBe('new');
    expect(src.calls).toEqual(['k']);
  });

  it('keeps it when the one batch that became durable meanwhile did not write the key', async () => {
    const cache = new ReadCache();
    let release!: (v: Buffer) => void;
    const reading = cache.read('k', () => new Promise<Buffer>((r) => (release = r)));
    cache.applied([put('other', 'x')]);
    release(b('v'));
    await reading;
    const src = source(new Map());
    expect((await cache.read('k', src.load('k')))?.toString()).toBe('v');
    expect(src.calls).toEqual([]);
  });

  it('does not fill across two batches, nor after clear()', async () => {
    const cache = new ReadCache();
    let release!: (v: Buffer) => void;
    const reading = cache.read('k', () => new Promise<Buffer>((r) => (release = r)));
    cache.applied([put('x', '1')]);
    cache.applied([put('y', '1')]);
    release(b('v'));
    await reading;
    expect(cache.size).toBe(0);
    await cache.read('k', async () => b('v'));
    cache.clear();
    expect(cache.size).toBe(0);
  });

  it('evicts beyond its entry and byte limits, an entry read since it came in last (second chance), and skips large values', async () => {
    const cache = new ReadCache({ maxEntries: 2, maxBytes: 10, maxValueBytes: 6 });
    const src = source(new Map([['a', b('aaaa')], ['b', b('bbbb')], ['c', b('c')], ['big', b('1234567')]]));
    await cache.read('a', src.load('a'));
    await cache.read('b', src.load('b'));
    await cache.read('a', src.load('a')); // a is marked: it gets a second chance
    await cache.read('c', src.load('c')); // over 2 entries: a moves to the end unmarked, b goes
    await cache.read('b', src.load('b'));
    expect(src.calls).toEqual(['a', 'b', 'c', 'b']);
    await cache.read('big', src.load('big'));
    await cache.read('big', src.load('big'));
    expect(src.calls.filter((k) => k === 'big')).toHaveLength(2);
    expect(cache.size).toBeLessThanOrEqual(2);
  });

  it('keeps a hot set that is read over and over while cold keys stream through', async () => {
    const cache = new ReadCache({ maxEntries: 4, maxBytes: 1 << 20, maxValueBytes: 1 << 10 });
    const data = new Map<string, Buffer>();
    for (let i = 0; i < 100; i++) data.set(`k${i}`, b(`v${i}`));
    const src = source(data);
    for (let i = 0; i < 100; i++) {
      await cache.read('k0', src.load('k0'));
      await cache.read('k1', src.load('k1'));
      await cache.read(`k${i + 2}`, src.load(`k${i + 2}`));
    }
    expect(src.calls.filter((k) => k === 'k0' || k === 'k1')).toEqual(['k0', 'k1']);
    expect(cache.size).toBeLessThanOrEqual(4);
  });

  it("takes Vault's disable_cache and cache_size: off keeps nothing, a size bounds the entries, at most 0 is the default", async () => {
    expect(readCacheLimits({})).toEqual(DEFAULT_READ_CACHE);
    expect(readCacheLimits({ entries: 0 })).toEqual(DEFAULT_READ_CACHE);
    expect(readCacheLimits({ entries: -5 })).toEqual(DEFAULT_READ_CACHE);
    expect(readCacheLimits({ entries: 3 })).toEqual({ ...DEFAULT_READ_CACHE, maxEntries: 3 });
    const off = new ReadCache(readCacheLimits({ disabled: true, entries: 100 }));
    const src = source(new Map([['a', b('1')]]));
    await off.read('a', src.load('a'));
    await off.read('a', src.load('a'));
    off.applied([put('a', '2')]);
    expect(off.size).toBe(0);
    expect(src.calls).toEqual(['a', 'a']);
    const three = new ReadCache(readCacheLimits({ entries: 3 }));
    for (const k of ['a', 'b', 'c', 'd']) await three.read(k, src.load(k));
    expect(three.size).toBe(3);
  });
});
