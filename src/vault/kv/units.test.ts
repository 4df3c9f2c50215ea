import { z } from 'zod';
import { InvalidRequest } from '../../core/errors.js';
import { field, optional, parseFields } from './fields.js';
import { checkPath, versionKey } from './layout.js';
import { KeyedMutex } from '../../core/keyed-mutex.js';
import { mergePatch } from './merge-patch.js';
import { goDuration, rfc3339 } from './time.js';

describe('kv building blocks', () => {
  it('renders times as Go RFC3339Nano and durations as Go Duration.String', () => {
    expect(rfc3339(new Date('2024-01-02T03:04:05.000Z'))).toBe('2024-01-02T03:04:05Z');
    expect(rfc3339(new Date('2024-01-02T03:04:05.100Z'))).toBe('2024-01-02T03:04:05.1Z');
    expect(rfc3339(new Date('2024-01-02T03:04:05.123Z'))).toBe('2024-01-02T03:04:05.123Z');
    expect([0, 45, 90, 3600, 5400, 90061, -1].map(goDuration)).toEqual(['0s', '45s', '1m30s', '1h0m0s', '1h30m0s', '25h1m1s', '-1s']);
  });

  it('pads version numbers so string order is numeric order', () => {
    expect(versionKey('a', 10) > versionKey('a', 9)).toBe(true);
    expect(versionKey('a/b', 255)).toBe('versions/a/b/00000000000000ff');
  });

  it('accepts only clean paths', () => {
    expect(checkPath('a/b', 'leaf')).toBe('a/b');
    expect(checkPath('', 'dir')).toBe('');
    expect(checkPath('a/', 'dir')).toBe('a/');
    for (const bad of ['', 'a/', '/a', 'a//b', '..', 'a/../b']) expect(() => checkPath(bad, 'leaf')).toThrow(InvalidRequest);
  });

  it('refuses exactly the paths with an empty or ".." segment', () => {
    // Every path of up to four characters over the alphabet that matters, against the rule stated plainly.
    const alphabet = ['a', '.', '/'];
    let paths = [''];
    const all: string[] = [''];
    for (let n = 0; n < 4; n++) {
      paths = paths.flatMap((p) => alphabet.map((c) => p + c));
      all.push(...paths);
    }
    for (const path of all) {
      const rule = path === '' || path.split('/').some((seg) => seg === '' || seg === '..');
      const refused = (() => {
        try {
          checkPath(path, 'leaf');
          return false;
        } catch (e) {
          if (e instanceof InvalidRequest) return true;
          throw e;
        }
      })();
      expect({ path, refused }).toEqual({ path, refused: rule });
    }
  });

  it('coerces Vault-style string inputs and names the field on failure', () => {
    const schema = z.object({
      n: optional(field.int),
      b: optional(field.bool),
      d: optional(field.duration(true)),
      l: optional(field.intList),
    });
    expect(parseFields(schema, { n: '-3', b: 'f', d: '-1h', l: '1, 2' })).toEqual({ n: -3, b: false, d: -3600, l: [1, 2] });
    expect(parseFields(schema, { n: 4, b: '1', d: 30, l: 7 })).toEqual({ n: 4, b: true, d: 30, l: [7] });
    expect(parseFields(schema, { n: null })).toEqual({});
    expect(() => parseFields(schema, { n: '9007199254740993' })).toThrow(InvalidRequest);
    expect(() => parseFields(schema, { b: 'yes' })).toThrow('error converting input for field "b": expected a boolean');
    expect(() => parseFields(z.object({ d: optional(field.duration(false)) }), { d: '-5s' })).toThrow('must not be negative');
  });

  it('applies RFC 7386 merge patches without touching prototypes', () => {
    expect(mergePatch({ a: 1, b: { c: 2, d: 3 } }, { a: null, b: { c: null, e: [1] } })).toEqual({ b: { d: 3, e: [1] } });
    expect(mergePatch({ a: 1 }, [1])).toEqual([1]);
    const out = mergePatch({}, JSON.parse('{"__proto__": {"polluted": true}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('runs same-key sections one at a time and forgets idle keys', async () => {
    const locks = new KeyedMutex();
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = locks.run('k', async () => {
      order.push('first:start');
      await gate;
      order.push('first:end');
    });
    const second = locks.run('k', async () => {
      order.push('second');
    });
    const other = locks.run('other', async () => {
      order.push('other');
    });
    await other;
    expect(order).toEqual(['first:start', 'other']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first:start', 'other', 'first:end', 'second']);
    await expect(locks.run('k', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(locks.size).toBe(0);
  });
});
