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

/** One schema per field name and kind, made once (a zod object schema is costly to build per request). */
const schemas = new Map<string, z.ZodType>();
function schemaOf(kind: 'int' | 'bool' | 'duration', name: string): z.ZodType {
  const key = `${kind}\0${name}`;
  let schema = schemas.get(key);
  if (schema === undefined) {
    const f = kind === 'int' ? field.int : kind === 'bool' ? field.bool : field.duration(false);
    schemas.set(key, (schema = z.object({ [name]: optional(f) })));
  }
  return schema;
}

function parsed<T>(kind: 'int' | 'bool' | 'duration', data: Data, name: string): T | undefined {
  const v = data[name];
  if (v === undefined || v === null) return undefined;
  if (kind === 'int' && typeof v === 'number' && Number.isSafeInteger(v)) return v as T;
  if (kind === 'bool' && typeof v === 'boolean') return v as T;
  return (parseFields(schemaOf(kind, name), { [name]: v }) as Record<string, T | undefined>)[name];
}

export function intField(data: Data, name: string, fallback = 0): number {
  return parsed<number>('int', data, name) ?? fallback;
}

export function boolField(data: Data, name: string): boolean | undefined {
  return parsed<boolean>('bool', data, name);
}

export function durationField(data: Data, name: string): number | undefined {
  return parsed<number>('duration', data, name);
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

/**
 * Go's base64.StdEncoding.DecodeString: padded, newlines ignored, trailing bits not checked (Go's
 * encoding is not Strict); Go's error text with the offending byte's index.
 */
export function strictBase64(input: string): Buffer {
  // A value that is its decoding's own standard encoding is valid as Go reads it: one decode and
  // one encode (~1.9 us for 1 KiB) instead of the scans below (~5 us), which find the error.
  const decoded = Buffer.from(input, 'base64');
  if (decoded.toString('base64') === input) return decoded;
  const s = input.includes('\n') || input.includes('\r') ? input.replace(/[\r\n]/g, '') : input;
  const bad = s.search(/[^A-Za-z0-9+/=]/);
  if (bad !== -1) throw new InvalidRequest(`illegal base64 data at input byte ${bad}`);
  const pad = s.indexOf('=');
  if (pad !== -1 && (!/^={1,2}$/.test(s.slice(pad)) || s.length % 4 !== 0)) throw new InvalidRequest(`illegal base64 data at input byte ${pad}`);
  if (s.length % 4 !== 0) throw new InvalidRequest(`illegal base64 data at input byte ${s.length - (s.length % 4)}`);
  return Buffer.from(s, 'base64');
}
