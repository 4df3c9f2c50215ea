/**
 * Field schemas that accept what Vault clients send: `vault write k=v` sends every scalar as a
 * string, so booleans, integers and durations also come as "true", "3", "30m".
 *
 *   const Body = z.object({ force: boolish.default(false), ttl: duration.default(1800) });
 */
import { z } from 'zod';
import { parseDuration } from '../core/duration.js';
import { InvalidRequest } from '../core/errors.js';

export const boolish = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0', 't', 'f', 'TRUE', 'FALSE', 'True', 'False']).transform((s) => ['true', '1', 't', 'TRUE', 'True'].includes(s)),
]);

export const intish = z.union([
  z.number().int(),
  z.string().regex(/^-?\d+$/, 'expected an integer').transform(Number),
]);

export const duration = z.union([z.number(), z.string()]).transform((v, ctx) => {
  try {
    return parseDuration(v);
  } catch {
    ctx.addIssue({ code: 'custom', message: `invalid duration "${String(v).slice(0, 40)}"` });
    return z.NEVER;
  }
});

/** A list given as a JSON array or as a comma-separated string (`policies=a,b`). */
export const stringList = z.union([
  z.array(z.string()),
  z.string().transform((s) => s.split(',').map((x) => x.trim()).filter((x) => x !== '')),
]);

export const stringMap = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));

/** No fields; unknown body keys are ignored with a warning (query parameters are not checked). */
export const empty = z.object({});

/** Vault's wording for body parameters an endpoint does not know (a warning, never an error). */
export function unrecognizedWarning(keys: readonly string[]): string {
  return `Endpoint ignored these unrecognized parameters: [${keys.join(' ')}]`;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A JSON value's type as a client would name it. */
function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) {
    if (!isPlainObject(v) && !Array.isArray(v)) return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/**
 * What a failed value should have been: the types expected (an invalid_type issue, or a union
 * none of whose branches takes the value's type), or a branch's own message when the value had an
 * accepted type but a wrong value (`"maybe"` for a boolean field that also takes "true").
 */
function expectation(issue: z.core.$ZodIssue, value: unknown): { types: string[] } | { message: string } | undefined {
  if (issue.code === 'invalid_type') return { types: [issue.expected] };
  if (issue.code === 'invalid_value') {
    // An enum or literal: a type error when no allowed value has the value's type.
    const types = [...new Set(issue.values.map(jsonType))];
    return types.includes(jsonType(value)) ? { message: issue.message } : { types };
  }
  if (issue.code !== 'invalid_union') return undefined;
  const types = new Set<string>();
  for (const branch of issue.errors) {
    const root = branch.find((i) => i.path.length === 0);
    if (root === undefined) continue;
    const inner = expectation(root, value);
    if (inner === undefined) return { message: root.message };
    if ('message' in inner) return inner;
    for (const t of inner.types) types.add(t);
  }
  return types.size > 0 ? { types: [...types] } : undefined;
}

/**
 * One message per cause, whatever message a schema declares: a field that is absent is
 * "missing required field", a field of the wrong type names the type expected and the type
 * received, and anything else (a range, a format, a refinement) keeps the schema's own message.
 */
export function fieldMessages(error: z.ZodError, input: unknown): string[] {
  return error.issues.map((i) => {
    const name = i.path.map(String).join('.');
    const value = valueAt(input, i.path);
    const expected = expectation(i, value);
    const at = name === '' ? '' : `field "${name}": `;
    if (expected !== undefined && value === undefined && name !== '') return `missing required field "${name}"`;
    if (expected !== undefined && 'types' in expected) {
      const what = `expected ${expected.types.join(' or ')}, received ${jsonType(value)}`;
      return name === '' ? `invalid request body: ${what}` : `${at}${what}`;
    }
    return `${at}${expected?.message ?? i.message}`;
  });
}

/** A validated operation's input, and the warnings to answer with (unknown body fields). */
export interface ParsedFields<T> {
  readonly data: T;
  readonly warnings: readonly string[];
}

/**
 * The one way a route's input meets its schema (dispatch, and handlers that choose a schema by
 * path). For object schemas, a top-level `null` means "not set", as Vault's decoder treats it
 * (hvac sends `"description": null`), so such keys are dropped before validation; free-form
 * schemas (records, unknown) keep their data as sent. With `warnUnknown`, keys an object schema
 * neither declares nor passes through become Vault's "unrecognized parameters" warning.
 *
 * @throws InvalidRequest with one message per failing field.
 */
export function parseFields<T>(schema: z.ZodType<T>, input: Readonly<Record<string, unknown>>, opts: { warnUnknown: boolean }): ParsedFields<T> {
  let value: Record<string, unknown> = input;
  const warnings: string[] = [];
  if (schema instanceof z.ZodObject && isPlainObject(input)) {
    value = {};
    for (const [k, v] of Object.entries(input)) if (v !== null) value[k] = v;
    const shape = schema.shape as Record<string, unknown>;
    if (opts.warnUnknown && schema._zod.def.catchall === undefined) {
      const unknown = Object.keys(value).filter((k) => !Object.hasOwn(shape, k)).sort();
      if (unknown.length > 0) warnings.push(unrecognizedWarning(unknown.map((k) => k.slice(0, 64)).slice(0, 32)));
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new InvalidRequest(fieldMessages(parsed.error, value));
  return { data: parsed.data, warnings };
}
