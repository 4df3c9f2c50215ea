/**
 * The two system records behind DR operation tokens, as JSON: the attempt in progress (kept by
 * the shared generation mechanism, seal/root-generation.ts, under `attempt`) and the SHA-256
 * hashes of the tokens issued (`tokens`, read and written here).
 *
 *   const tokens = await loadTokens(records);
 *   await saveTokens(records, [...tokens, { sha256, issued_at }]);
 *
 * Root key shares are never written: progress lives in memory only.
 */
import { z } from 'zod';
import { Internal } from '../core/errors.js';

/** Where the records live; `put(name, undefined)` deletes. */
export interface TokenRecords {
  get(name: string): Promise<Buffer | undefined>;
  put(name: string, value: Buffer | undefined): Promise<void>;
}

export const OperationTokenRecord = {
  attempt: 'dr-operation-token/attempt',
  tokens: 'dr-operation-token/tokens',
} as const;

const IssuedToken = z.object({
  /** Hex SHA-256 of the token. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** RFC 3339. */
  issued_at: z.string(),
});
export type IssuedToken = z.infer<typeof IssuedToken>;

const Tokens = z.object({ tokens: z.array(IssuedToken) });

function decode<T>(schema: z.ZodType<T>, name: string, value: Buffer): T {
  let json: unknown;
  try {
    json = JSON.parse(value.toString('utf8'));
  } catch (cause) {
    throw new Internal(`record ${name} is not JSON`, { cause });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Internal(`record ${name} is malformed`, { cause: parsed.error });
  return parsed.data;
}

function encode(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

export async function loadTokens(records: TokenRecords): Promise<IssuedToken[]> {
  const value = await records.get(OperationTokenRecord.tokens);
  return value === undefined ? [] : decode(Tokens, OperationTokenRecord.tokens, value).tokens;
}

/** Saves the list; an empty list deletes the record. */
export async function saveTokens(records: TokenRecords, tokens: readonly IssuedToken[]): Promise<void> {
  await records.put(OperationTokenRecord.tokens, tokens.length === 0 ? undefined : encode({ tokens }));
}
