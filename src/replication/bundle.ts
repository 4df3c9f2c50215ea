/**
 * The activation bundle a primary issues for one secondary id (REPLICATION.md section 6): who the
 * set is, where its primary is, the mTLS material for the cluster port, and the seal the
 * secondary takes over. It travels response-wrapped (redeemed once at the primary's
 * sys/wrapping/unwrap) or sealed to the secondary's public key, and is never logged.
 *
 *   const b = parseBundle(unwrapped.data);
 */
import { z } from 'zod';
import { KINDS } from '../core/replication/index.js';
import { InvalidRequest } from '../core/errors.js';

export const BUNDLE_VERSION = 1;

const schema = z.object({
  v: z.literal(BUNDLE_VERSION),
  kind: z.enum(KINDS),
  cluster_id: z.string().min(1),
  secondary_id: z.string().min(1),
  primary_cluster_addr: z.string().min(1),
  primary_api_addr: z.string(),
  /** DNS SAN of the primary's server certificate; the secondary pins it. */
  server_name: z.string().min(1),
  ca_pem: z.string().min(1),
  cert_pem: z.string().min(1),
  key_pem: z.string().min(1),
  /** The primary's seal config (Shamir shares and threshold), adopted with its keyring. */
  seal_config: z.object({ type: z.literal('shamir'), secret_shares: z.number().int(), secret_threshold: z.number().int() }),
  /** The primary's keyring sealed under its root key (base64): unseals with the primary's shares. */
  encrypted_keyring: z.string().min(1),
  /** The live keyring (base64), so the secondary serves without an unseal right after activation. */
  keyring: z.string().min(1),
  /**
   * When the token stops being valid (ms since the epoch, the primary's clock). A sealed token is
   * opened without asking the primary, so the secondary checks this before it wipes anything;
   * absent in bundles of older primaries.
   */
  expires_at: z.number().int().positive().optional(),
});

export type Bundle = z.infer<typeof schema>;

export function parseBundle(value: unknown): Bundle {
  const r = schema.safeParse(value);
  if (!r.success) throw new InvalidRequest('the activation token does not carry a valid replication bundle');
  return r.data;
}
