/**
 * What a node persists about its DR role: the state machine's state plus the key material of the
 * role. It is a node-class record (never replicated, never in the WAL or Merkle index) encrypted
 * by the barrier; a small plaintext summary (the mode only) lives in a system record so a sealed
 * node can still say what it is.
 *
 *   const rec = await loadRecord(store); rec.state.mode
 */
import type { JWK } from 'jose';
import { initialState, type State } from '../core/replication/index.js';
import type { Store } from '../storage/store.js';

export const RECORD_KEY = 'node/replication/dr/state';
export const MODE_SUMMARY = 'replication-dr-mode';

export interface PrimaryMaterial {
  readonly caCertPem: string;
  readonly caKeyPem: string;
  readonly serverCertPem: string;
  readonly serverKeyPem: string;
  readonly serverName: string;
  readonly signing: { readonly privateJwk: JWK; readonly publicJwk: JWK };
  /** Secondary id -> SHA-256 fingerprint of the client certificate issued for it. */
  readonly certs: Readonly<Record<string, string>>;
  /**
   * Secondary id -> accessor of the wrapping token that carries its bundle, so revoking the id
   * also invalidates the token before anyone redeems it (absent for sealed tokens).
   */
  readonly wrapAccessors?: Readonly<Record<string, string>>;
}

export interface SecondaryMaterial {
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  readonly serverName: string;
  readonly knownPrimaryClusterAddrs: readonly string[];
}

export interface DrRecord {
  readonly state: State;
  readonly primary?: PrimaryMaterial;
  readonly secondary?: SecondaryMaterial;
  /** From secondary/generate-public-key, kept until activation. */
  readonly boxKey?: { readonly publicKeyB64: string; readonly secretKeyB64: string };
  /** Why the last activation ended in `disabled` (the primary refused it after the wipe). */
  readonly lastError?: string;
}

export async function loadRecord(store: Store): Promise<DrRecord> {
  const raw = await store.get(RECORD_KEY);
  if (!raw) return { state: initialState('dr') };
  return JSON.parse(raw.toString('utf8')) as DrRecord;
}

export async function saveRecord(store: Store, rec: DrRecord): Promise<void> {
  await store.commit([{ type: 'put', key: RECORD_KEY, value: Buffer.from(JSON.stringify(rec)) }]);
}
