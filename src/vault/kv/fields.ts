/**
 * Field schemas for KV requests, tolerant the way Vault's are: `vault write k=v` sends every
 * scalar as a string, so "3" is an int, "true" a bool, "1,2" an int list, "1h" a duration.
 *
 *   const f = parseFields(z.object({ max_versions: optional(field.uint) }), req.data);
 *   // throws InvalidRequest('error converting input for field "max_versions": expected ...')
 */
import { z } from 'zod';
import { parseDuration } from '../../core/duration.js';
import { InvalidRequest, isTesseraError } from '../../core/errors.js';

const INT = /^[+-]?\d+$/;

const int = z.union([z.number().int(), z.string().trim().regex(INT).transform(Number)], { error: 'expected an integer' })
  .refine(Number.isSafeInteger, { error: 'integer out of range' });

const uint = int.refine((n) => n >= 0, { error: 'must not be negative' });

/** Go's strconv.ParseBool spellings, case-insensitively. */
const bool = z.union([z.boolean(), z.stringbool({ truthy: ['1', 't', 'true'], falsy: ['0', 'f', 'false'] })], {
  error: 'expected a boolean',
});

/** Whole seconds; a bare number or numeric string is seconds. Negative only where Vault allows it. */
function duration(signed: boolean) {
  return z.union([z.number(), z.string()], { error: 'expected a duration' }).transform((raw, ctx) => {
    const negative = typeof raw === 'number' ? raw < 0 : raw.trim().startsWith('-');
    if (negative && !signed) {
      ctx.issues.push({ code: 'custom', message: 'must not be negative', input: raw });
      return z.NEVER;
    }
    const abs = typeof raw === 'number' ? Math.abs(raw) : raw.trim().replace(/^-/, '');
    try {
      const seconds = parseDuration(abs);
      return negative ? -seconds : seconds;
    } catch (e) {
      if (!isTesseraError(e)) throw e;
      ctx.issues.push({ code: 'custom', message: `invalid duration "${String(raw).slice(0, 40)}"`, input: raw });
      return z.NEVER;
    }
  });
}

type JsonMap = Record<string, unknown>;
const isMap = (v: unknown): v is JsonMap => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON object, or a string holding one (as `vault write path data=@file.json` may send). */
const map = z.unknown().transform((raw, ctx): JsonMap => {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      value = undefined;
    }
  }
  if (isMap(value)) return value;
  ctx.issues.push({ code: 'custom', message: 'expected a map', input: raw });
  return z.NEVER;
});

/** Vault's TypeKVPairs as KV v2 decodes custom_metadata: scalars become strings; null is kept for patch. */
const kvPairs = map.transform((m, ctx): Record<string, string | null> => {
  const out: [string, string | null][] = [];
  for (const [k, v] of Object.entries(m)) {
    if (v === null || typeof v === 'string') out.push([k, v]);
    else if (typeof v === 'number') out.push([k, String(v)]);
    else if (typeof v === 'boolean') out.push([k, v ? '1' : '0']); // mapstructure's weak bool -> string
    else {
      ctx.issues.push({ code: 'custom', message: `value of "${k}" must be a string`, input: v });
      return z.NEVER;
    }
  }
  return Object.fromEntries(out);
});

/** Vault's TypeCommaIntSlice: [1, "2"], "1,2" or 3. */
const intList = z
  .union([z.array(z.unknown()), z.number().transform((n) => [n]), z.string().transform((s) => s.split(','))], {
    error: 'expected a list of integers',
  })
  .pipe(z.array(int));

export const field = { int, uint, bool, duration, map, kvPairs, intList } as const;

/** Absent and null both mean "not given", as with Vault's GetOk. */
export function optional<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => v ?? undefined, schema.optional());
}

export function parseFields<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new InvalidRequest(
    result.error.issues.map((i) =>
      i.path.length > 0 ? `error converting input for field "${i.path.join('.')}": ${i.message}` : i.message,
    ),
  );
}
