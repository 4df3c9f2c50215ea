/**
 * The replicated keyring record: how a rotation or a rekey on a primary reaches its DR and
 * performance secondaries through the WAL, before any value encrypted under a new term.
 *
 *   const ct = sealRecord(liveRing, { keyring: next, sealedKeyring, sealConfig, installed });
 *   // committed as `core/seal/keyring` together with the system records `keyring` and `seal-config`
 *   const rec = openRecord(liveRing, ct);   // a secondary: adopt rec.keyring, store the two records
 *
 * The record is encrypted under the keyring's FIRST term, which every node of a replication set
 * holds (activation ships the whole keyring and terms are never dropped), so a secondary that
 * missed any number of rotations (a Merkle sync ships only the newest record) can still open it.
 * It carries the new keyring itself (for the live ring), the keyring sealed under the root key and
 * the seal config (what a restart unseals with), and when each term was installed.
 */
import { z } from 'zod';
import { Internal } from '../core/errors.js';
import { checkSealConfig, type SealConfig } from './config.js';
import { Keyring } from './keyring.js';

/** Replicated class: every secondary of every kind receives it. */
export const KEYRING_RECORD_KEY = 'core/seal/keyring';

export interface KeyringRecord {
  readonly keyring: Keyring;
  readonly sealedKeyring: Buffer;
  readonly sealConfig: SealConfig;
  /** Term (decimal) to RFC 3339 install time. */
  readonly installed: Readonly<Record<string, string>>;
}

const schema = z.object({
  keyring: z.string(),
  sealed_keyring: z.string(),
  seal_config: z.unknown(),
  installed: z.record(z.string(), z.string()),
});

const aad = (): Buffer => Buffer.from(KEYRING_RECORD_KEY, 'utf8');

/** The record's value as stored: ciphertext under `live`'s first term (AAD: the key, as the barrier). */
export function sealRecord(live: Keyring, record: KeyringRecord): Buffer {
  const ring = record.keyring.serialize();
  const plain = Buffer.from(
    JSON.stringify({
      keyring: ring.toString('base64'),
      sealed_keyring: record.sealedKeyring.toString('base64'),
      seal_config: record.sealConfig,
      installed: record.installed,
    }),
  );
  ring.fill(0);
  try {
    return live.encryptUnder(live.terms[0] ?? 1, plain, aad());
  } finally {
    plain.fill(0);
  }
}

/** Decodes a decrypted record; anything else than what sealRecord wrote is Internal. */
export function decodeRecord(plain: Buffer): KeyringRecord {
  let parsed: z.infer<typeof schema>;
  try {
    parsed = schema.parse(JSON.parse(plain.toString('utf8')));
  } catch (cause) {
    throw new Internal('the replicated keyring record is unreadable', { cause });
  }
  const ring = Buffer.from(parsed.keyring, 'base64');
  try {
    const sealedKeyring = Buffer.from(parsed.sealed_keyring, 'base64');
    if (!Keyring.isSealedRecord(sealedKeyring)) throw new Internal('the replicated keyring record holds a malformed sealed keyring');
    return { keyring: Keyring.deserialize(ring), sealedKeyring, sealConfig: checkSealConfig(parsed.seal_config), installed: parsed.installed };
  } finally {
    ring.fill(0);
  }
}

/** Opens a stored record with the live keyring. */
export function openRecord(live: Keyring, ct: Buffer): KeyringRecord {
  const plain = live.decrypt(ct, aad());
  try {
    return decodeRecord(plain);
  } finally {
    plain.fill(0);
  }
}
