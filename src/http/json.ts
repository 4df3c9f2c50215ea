/**
 * JSON.stringify for replies, with the text of each deeply frozen object remembered: a stored
 * record's shared decode (storage/store.ts getDecoded: a KV secret, its version's metadata) is
 * serialized once while it lives, not on every read that answers it. The output is
 * JSON.stringify's, byte for byte: plain objects and arrays are walked here, everything else
 * (strings, numbers, Dates, Buffers, anything with toJSON) goes to JSON.stringify itself.
 *
 *   replyJson({ request_id: id, data: { data: frozenSecret } });   // as JSON.stringify(...)
 */

import { deeplyFrozen } from '../core/frozen.js';

/** The text of deeply frozen plain objects and arrays: frozen all the way down never changes. */
const texts = new WeakMap<object, string>();
/** Frozen objects found not to be frozen all the way down (or not plain): never remembered. */
const mutable = new WeakSet<object>();

function plain(v: object): boolean {
  if (Array.isArray(v)) return true;
  const proto: unknown = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

/**
 * Objects are walked only near the top (an envelope, its `data`), where a frozen record sits; an
 * array or anything deeper that is not a remembered frozen object goes to JSON.stringify whole.
 */
const WALK_DEPTH = 3;

function walk(v: unknown, depth: number): string | undefined {
  if (v === null || typeof v !== 'object' || !plain(v)) return JSON.stringify(v) as string | undefined;
  if (Object.isFrozen(v) && !mutable.has(v)) {
    const known = texts.get(v);
    if (known !== undefined) return known;
    if (deeplyFrozen(v, plain)) {
      const text = JSON.stringify(v);
      texts.set(v, text);
      return text;
    }
    mutable.add(v);
  }
  if (Array.isArray(v) || depth >= WALK_DEPTH) return JSON.stringify(v);
  let out = '';
  for (const k of Object.keys(v)) {
    const t = walk((v as Record<string, unknown>)[k], depth + 1);
    if (t === undefined) continue;
    out += `${out === '' ? '' : ','}${JSON.stringify(k)}:${t}`;
  }
  return `{${out}}`;
}

/** JSON.stringify(value), undefined where it is undefined. */
export function replyJson(value: unknown): string | undefined {
  return walk(value, 0);
}
