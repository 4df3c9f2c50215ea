/**
 * The seal configuration record ('seal-config'), stored as JSON in Vault's field names. Its
 * presence is what makes a node initialised.
 *
 *   const rec = encodeSealConfig({ type: 'shamir', secret_shares: 5, secret_threshold: 3 });
 *   decodeSealConfig(rec);   // the same object; Internal if the stored bytes are not one
 */
import { z } from 'zod';
import { Internal, InvalidRequest } from '../core/errors.js';
import { validateShareConfig } from './shares.js';

export interface SealConfig {
  readonly type: 'shamir';
  readonly secret_shares: number;
  readonly secret_threshold: number;
}

const schema = z.object({
  type: z.literal('shamir'),
  secret_shares: z.number().int(),
  secret_threshold: z.number().int(),
});

/** A config received from elsewhere (e.g. a primary): InvalidRequest unless Vault's rules hold. */
export function checkSealConfig(value: unknown): SealConfig {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new InvalidRequest('seal configuration is malformed');
  const { secret_shares, secret_threshold } = parsed.data;
  validateShareConfig(secret_shares, secret_threshold);
  return { type: 'shamir', secret_shares, secret_threshold };
}

export function encodeSealConfig(config: SealConfig): Buffer {
  const { type, secret_shares, secret_threshold } = config;
  return Buffer.from(JSON.stringify({ type, secret_shares, secret_threshold }));
}

/** Reads the stored record; anything unreadable is storage corruption, hence Internal. */
export function decodeSealConfig(record: Buffer): SealConfig {
  try {
    return checkSealConfig(JSON.parse(record.toString('utf8')));
  } catch (cause) {
    throw new Internal('stored seal configuration is unreadable', { cause });
  }
}
