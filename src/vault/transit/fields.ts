/**
 * Transit's request fields, tolerant as Vault's framework is (`vault write` sends scalars as
 * strings), and its batch items (`batch_input`: a list of objects, or a JSON string of one).
 *
 *   const n = intField(req.data, 'key_version');          // 0 when absent
 *   const items = batchItems(req.data, ['plaintext']);    // undefined without batch_input
 */
import { InvalidRequest } from '../../core/errors.js';
import { field, optional, parseFields } from '../kv/fields.js';
import { z } from 'zod';

type Data = Readonly<Record<string, unknown>>;

export function intField(data: Data, name: string, fallback = 0): number {
  return parseFields(z.object({ [name]: optional(field.int) }), { [name]: data[name] })[name] ?? fallback;
}

export function boolField(data: Data, name: string): boolean | undefined {
  return parseFields(z.object({ [name]: optional(field.bool) }), { [name]: data[name] })[name];
}

export function durationField(data: Data, name: string): number | undefined {
  return parseFields(z.object({ [name]: optional(field.duration(false)) }), { [name]: data[name] })[name];
}

export function stringField(data: Data, name: string, fallback = ''): string {
  const v = data[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new InvalidRequest(`error converting input for field "${name}": expected a string`);
}

/** Most items one batch may carry (a request's own size is bounded by the HTTP layer too). */
export const MAX_BATCH_ITEMS = 10_000;

export type BatchItem = Readonly<Record<string, unknown>>;

/** `batch_input` as a list of items; undefined when the request has none. */
export function batchItems(data: Data): BatchItem[] | undefined {
  let raw = data.batch_input;
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'string') {
    try {
      raw = JSON.parse(raw);
    } catch {
      throw new InvalidRequest('failed to parse batch input: expected a list of objects');
    }
  }
  if (!Array.isArray(raw) || raw.some((i) => typeof i !== 'object' || i === null || Array.isArray(i))) {
    throw new InvalidRequest('failed to parse batch input: expected a list of objects');
  }
  if (raw.length === 0) throw new InvalidRequest('missing batch input to process');
  if (raw.length > MAX_BATCH_ITEMS) throw new InvalidRequest(`batch_input holds ${raw.length} items; at most ${MAX_BATCH_ITEMS} are processed in one request`);
  return raw as BatchItem[];
}
