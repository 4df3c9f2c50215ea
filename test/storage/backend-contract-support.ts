/**
 * Helpers of the Backend contract suite (backend-contract.ts): op builders, readers of a range
 * into plain arrays, a settle-or-fail deadline, and the reference model ranges are checked against.
 *
 *   await backend.batch([put('a', 'x'), del('b')], { sync: true });
 *   expect(await collect(backend.iterate({ gte: 'a' }))).toEqual(modelRange(model, { gte: 'a' }));
 *   await within(2000, snapshot.close(), 'snapshot close');
 *
 * Order is LevelDB's everywhere: UTF-8 bytes, not JS's UTF-16 code units (`utf8Compare`).
 */
import type { BatchOp, RangeOptions } from '../../src/storage/backend.js';

export const buf = (s: string): Buffer => Buffer.from(s, 'utf8');

export function put(key: string, value: string | Buffer): BatchOp {
  return { type: 'put', key, value: typeof value === 'string' ? buf(value) : value };
}

export function del(key: string): BatchOp {
  return { type: 'del', key };
}

/** LevelDB's order: bytes of the UTF-8 encoding (not JS's UTF-16 code unit order). */
export function utf8Compare(a: string, b: string): number {
  return Buffer.compare(buf(a), buf(b));
}

export async function collect(
  it: AsyncIterable<[string, Buffer]>,
): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for await (const [k, v] of it) out.push([k, v.toString('utf8')]);
  return out;
}

export async function keysOf(it: AsyncIterable<[string, Buffer]>): Promise<string[]> {
  return (await collect(it)).map(([k]) => k);
}

/** Rejects if `p` has not settled within `ms`; guards tests against a hang that means a leak. */
export async function within<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The reference model: a plain map read back in UTF-8 byte order. */
export function modelRange(model: Map<string, string>, r: RangeOptions): Array<[string, string]> {
  const keys = [...model.keys()]
    .filter(
      (k) =>
        (r.gte === undefined || utf8Compare(k, r.gte) >= 0) &&
        (r.gt === undefined || utf8Compare(k, r.gt) > 0) &&
        (r.lt === undefined || utf8Compare(k, r.lt) < 0) &&
        (r.lte === undefined || utf8Compare(k, r.lte) <= 0),
    )
    .sort(utf8Compare);
  if (r.reverse) keys.reverse();
  const limited = r.limit === undefined ? keys : keys.slice(0, r.limit);
  return limited.map((k) => [k, model.get(k) ?? '']);
}
