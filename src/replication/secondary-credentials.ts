/**
 * A primary's side of its secondaries' credentials (moved out of driver.ts): the per-call check of
 * a presented certificate (a registered, unrevoked, unexpired id, with the leaf issued to it), and
 * minting an activation token for an id just registered: its client leaf, the bundle, sealed to
 * the secondary's public key or wrapped by the core and named by a JWT this primary signs.
 *
 *   const status = checkSecondary({ state, primary, label, now }, id, fingerprint);  // throws PermissionDenied
 *   validateTokenRequest(req);                                                        // throws InvalidRequest
 *   const answer = await mintActivationToken(deps, req, now);                         // after issueToken
 */
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import { lookupSecondary, type Kind, type State, type TokenStatus } from '../core/replication/index.js';
import type { SealManager } from '../seal/index.js';
import { isBoxPublicKey, sealTo, signActivationJwt } from './activation-token.js';
import { BUNDLE_VERSION, type Bundle } from './bundle.js';
import { SECONDARY_ID, type CoreHooks } from './driver-options.js';
import { issueLeaf } from './pki.js';
import type { PrimaryMaterial } from './role-record.js';

export interface TokenRequest {
  readonly id: string;
  readonly ttlSeconds: number;
  readonly secondaryPublicKey: string;
}

export interface TokenAnswer {
  readonly wrapInfo?: Record<string, unknown>;
  readonly token?: string;
}

/** The transport's per-call check: a registered, unrevoked, unexpired id with its own certificate. */
export function checkSecondary(
  at: { readonly state: State; readonly primary: PrimaryMaterial | undefined; readonly label: string; readonly now: number },
  id: string,
  fingerprint: string,
): TokenStatus {
  const s = at.state;
  if (s.mode !== 'primary') throw new PermissionDenied(`this cluster is not a ${at.label} primary`);
  const entry = lookupSecondary(s.secondaries, id);
  if (!entry || entry.status === 'revoked') throw new PermissionDenied(`secondary "${id}" is not registered or was revoked`);
  if (entry.status === 'token-issued' && entry.expiresAt < at.now) throw new PermissionDenied(`the activation token of secondary "${id}" expired`);
  if (at.primary?.certs[id] !== fingerprint) throw new PermissionDenied(`the certificate presented is not the one issued to "${id}"`);
  return entry.status;
}

/** Everything is validated before the id is registered: a refused request registers nothing. */
export function validateTokenRequest(req: TokenRequest): void {
  if (!SECONDARY_ID.test(req.id)) {
    throw new InvalidRequest(
      `id "${req.id.slice(0, 40)}${req.id.length > 40 ? '...' : ''}" is not a valid secondary id: 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'`,
    );
  }
  if (!Number.isSafeInteger(req.ttlSeconds) || req.ttlSeconds <= 0) throw new InvalidRequest('ttl must be a positive whole number of seconds');
  if (req.secondaryPublicKey !== '' && !isBoxPublicKey(req.secondaryPublicKey)) {
    throw new InvalidRequest('secondary_public_key is not a valid base64 X25519 public key');
  }
}

/** What minting needs of the driver: the primary's material (read and saved through it) and its addresses. */
export interface MintDeps {
  readonly kind: Kind;
  readonly label: string;
  readonly clusterId: string;
  readonly seal: SealManager;
  readonly core: CoreHooks;
  readonly apiAddr: () => string;
  readonly clusterAddr: () => string;
  readonly now: () => number;
  /** The primary's material as of now. */
  primary(): PrimaryMaterial | undefined;
  /** Replaces the primary's material and persists the role record. */
  savePrimary(p: PrimaryMaterial): Promise<void>;
}

/**
 * The activation token of `req.id` (already registered by the issueToken step at `now`): a client
 * leaf recorded by fingerprint, and the bundle sealed to `secondaryPublicKey`, or wrapped by the
 * core (its accessor kept, so revoking the id revokes the token) and named by a signed JWT.
 */
export async function mintActivationToken(d: MintDeps, req: TokenRequest, now: number): Promise<TokenAnswer> {
  const p = d.primary();
  if (!p) throw new InvalidRequest(`this cluster is not a ${d.label} primary`);
  const leaf = await issueLeaf({ certPem: p.caCertPem, keyPem: p.caKeyPem }, { name: req.id, usage: 'client', ttlDays: 3650, now: d.now() });
  await d.savePrimary({ ...p, certs: { ...p.certs, [req.id]: leaf.fingerprint } });
  const exported = await d.seal.exportForSecondary();
  const bundle: Bundle = {
    v: BUNDLE_VERSION,
    kind: d.kind,
    cluster_id: d.clusterId,
    secondary_id: req.id,
    primary_cluster_addr: d.clusterAddr(),
    primary_api_addr: d.apiAddr(),
    server_name: p.serverName,
    ca_pem: p.caCertPem,
    cert_pem: leaf.certPem,
    key_pem: leaf.keyPem,
    seal_config: { ...exported.sealConfig },
    encrypted_keyring: exported.encryptedKeyring.toString('base64'),
    keyring: d.seal.exportKeyring().toString('base64'),
    expires_at: now + req.ttlSeconds * 1000,
  };
  if (req.secondaryPublicKey !== '') {
    try {
      return { token: sealTo(req.secondaryPublicKey, Buffer.from(JSON.stringify(bundle))) };
    } catch {
      throw new InvalidRequest('secondary_public_key is not a valid base64 X25519 public key');
    }
  }
  const path = `sys/replication/${d.kind}/primary/secondary-token`;
  const wrapped = await d.core.wrap({ ...bundle }, req.ttlSeconds, path);
  const latest = d.primary() ?? p;
  await d.savePrimary({ ...latest, wrapAccessors: { ...latest.wrapAccessors, [req.id]: wrapped.accessor } });
  const jwt = await signActivationJwt(
    { jti: wrapped.token, addr: d.apiAddr(), accessor: wrapped.accessor, ttlSeconds: req.ttlSeconds, now: new Date(now), clusterId: d.clusterId, kind: d.kind },
    p.signing.privateJwk,
  );
  return { wrapInfo: { token: jwt, accessor: wrapped.accessor, ttl: wrapped.ttl, creation_time: wrapped.creation_time, creation_path: path, wrapped_accessor: '' } };
}
