/**
 * Field schemas that accept what Vault clients send: `vault write k=v` sends every scalar as a
 * string, so booleans, integers and durations also come as "true", "3", "30m".
 *
 *   const Body = z.object({ force: boolish.default(false), ttl: duration.default(1800) });
 */
import { z } from 'zod';
import { parseDuration } from '../core/duration.js';

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

export const empty = z.object({}).passthrough();

/** A validation failure as client-facing messages: `field.path: what is wrong`. */
export function zodMessages(error: z.ZodError): string[] {
  return error.issues.map((i) => {
    const at = i.path.length > 0 ? `${i.path.join('.')}: ` : '';
    return `${at}${i.message}`;
  });
}
