/**
 * replyJson is JSON.stringify byte for byte, and a deeply frozen object's text is remembered
 * (and only such an object's: one frozen on top but changeable inside is serialized afresh).
 */
import { replyJson } from './json.js';

const deepFreeze = <T>(v: T): T => {
  if (v !== null && typeof v === 'object') {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
};

describe('replyJson', () => {
  it('answers what JSON.stringify answers', () => {
    const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
    const values: unknown[] = [
      undefined, null, 1, 'x', true, NaN, [1, undefined, () => 1], { a: undefined, b: () => 1, c: Symbol('s'), d: null },
      { request_id: 'r', data: { data: deepFreeze({ v: 'secret', n: [1, { x: 'y' }] }), metadata: { t: new Date(0), b: Buffer.from('ab') } }, warnings: null },
      { deep: { deeper: { deepest: { leaf: [1, 2, { z: undefined }] } } } }, { toJSON: () => 'custom' }, { nested: { toJSON: () => ({ k: 1 }) } },
      nullProto, { 2: 'b', 1: 'a', s: '\u2028"\\' }, deepFreeze([1, 'two', { three: 3 }]), { arr: [] , obj: {} },
      { n: -0, big: 1e21, small: 5e-7, inf: Infinity, ninf: -Infinity, f: false, t: true, z: null, 'a b': 1, 'é': 2, 'q"': 3, '': 4, 'k.-_9': 5 },
      { lease_duration: 0, renewable: false, data: { list: ['a'], n: 1.5, nested: { x: NaN } }, wrap_info: null },
    ];
    for (const v of values) expect(replyJson(v)).toBe(JSON.stringify(v));
  });

  it('remembers a deeply frozen object, and never one that can still change', () => {
    const frozen = deepFreeze({ v: 'one' });
    const first = replyJson({ data: frozen });
    expect(replyJson({ data: frozen })).toBe(first);
    const shallow = Object.freeze({ inner: { w: 'before' } });
    expect(replyJson({ data: shallow })).toBe('{"data":{"inner":{"w":"before"}}}');
    (shallow.inner as { w: string }).w = 'after';
    expect(replyJson({ data: shallow })).toBe('{"data":{"inner":{"w":"after"}}}');
  });
});
