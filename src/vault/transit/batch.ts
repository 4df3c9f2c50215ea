/**
 * What every transit operation shares: one item's outcome or error, the single-or-batch answer
 * (Vault's batchRequestResponse), the base64 `input` field, and the `vault:v<N>:` prefix of
 * ciphertexts, HMACs and signatures, each read with Vault's texts for its kind.
 *
 *   const out = items.map((item) => { try { return { valid: check(item) }; } catch (e) { return itemError(e); } });
 *   return answerItems(out, batch, { failedBatch: 'ok' });
 */
import { InvalidRequest, InvalidRequestWithData } from '../../core/errors.js';
import type { LogicalResponse } from '../logical.js';
import { stringField, strictBase64, type BatchItem } from './fields.js';

/** One item's fields, or `{ error }`. */
export type Outcome = Record<string, unknown>;

const failed = (o: Outcome): boolean => typeof o.error === 'string';

/** A user error as the item's `error`; anything else is not the item's to report. */
export function itemError(e: unknown): Outcome {
  if (e instanceof InvalidRequest) return { error: e.messages.join('; ') };
  throw e;
}

/**
 * A single request answers its outcome or throws its error; a batch answers every item with its
 * `reference`. `failedBatch`: whether a batch holding a failed item is a 400 carrying all the
 * results (encrypt, decrypt, rewrap) or a 200 (hmac, sign, verify), as in Vault.
 */
export function answerItems(out: readonly Outcome[], batch: readonly BatchItem[] | undefined, o: { readonly failedBatch: '400' | 'ok' }): LogicalResponse {
  if (batch === undefined) {
    const only = out[0] ?? {};
    if (failed(only)) throw new InvalidRequest(only.error as string);
    return { data: only };
  }
  const results = out.map((r, i) => ({ ...r, reference: stringField(batch[i] ?? {}, 'reference') }));
  if (o.failedBatch === '400' && out.some(failed)) throw new InvalidRequestWithData('a batch item failed', { batch_results: results });
  return { data: { batch_results: results } };
}

/**
 * An item's base64 `input`, or its error in Vault's words. `emptyAllowed`: only an absent input is
 * missing (sign and verify take an empty message); otherwise an empty one is too (hmac).
 */
export function decodeInput(item: BatchItem, missing: string, emptyAllowed = false): Buffer | Outcome {
  const raw = stringField(item, 'input');
  if (emptyAllowed ? item.input === undefined || item.input === null : raw === '') return { error: missing };
  try {
    return strictBase64(raw);
  } catch (e) {
    return { error: `unable to decode input as base64: ${(e as InvalidRequest).messages.join('; ')}` };
  }
}

const PREFIX = 'vault:v';
const PREFIX_TEXTS = {
  ciphertext: ['invalid ciphertext: no prefix', 'invalid ciphertext: wrong number of fields', 'invalid ciphertext: version number could not be decoded'],
  hmac: ['invalid HMAC to verify: no prefix', 'invalid HMAC: wrong number of fields', 'invalid HMAC: version number could not be decoded'],
  signature: ['invalid signature: no prefix', 'invalid signature: wrong number of fields', 'invalid signature: version number could not be decoded'],
} as const;

/** `vault:v<N>:<body>`: how a ciphertext, an HMAC or a signature names its key version. */
export const versioned = (version: number, body: string): string => `${PREFIX}${version}:${body}`;

/** `vault:v<N>:<rest>` split (Go's strconv.Atoi for N); InvalidRequest with Vault's text for `kind`. */
export function splitVersioned(value: string, kind: keyof typeof PREFIX_TEXTS): { version: number; rest: string } {
  const [noPrefix, fields, digits] = PREFIX_TEXTS[kind];
  if (!value.startsWith(PREFIX)) throw new InvalidRequest(noPrefix);
  const tail = value.slice(PREFIX.length);
  const colon = tail.indexOf(':');
  if (colon === -1) throw new InvalidRequest(fields);
  const n = tail.slice(0, colon);
  if (!/^[+-]?\d+$/.test(n) || !Number.isSafeInteger(Number(n))) throw new InvalidRequest(digits);
  return { version: Number(n), rest: tail.slice(colon + 1) };
}
