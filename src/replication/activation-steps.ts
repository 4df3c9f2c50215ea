/**
 * A secondary's steps toward a primary that talk to the outside (moved out of driver.ts): redeeming
 * an activation token into a bundle (refusing a token of another kind or set before it is spent,
 * an expired one, and, before a wipe, one the primary would not accept), the wipe itself (taking
 * over the primary's seal), and probing the addresses of update-primary until one answers as a
 * primary of this secondary's set.
 *
 *   const bundle = await redeemActivation(deps, { token, primaryApiAddr, caFile, caPath });
 *   await wipeAndAdoptSeal({ engine, seal, core }, bundle);  // the activation's wipe
 *   await probePrimaries(probe, (primary) => run({ type: 'probed', primary }));
 */
import type { Logger } from 'pino';
import { InvalidRequest } from '../core/errors.js';
import { KIND_POLICY, type Kind, type State } from '../core/replication/index.js';
import { confirmWithPrimary } from './activation-check.js';
import { isJwt, peekJwt } from './activation-token.js';
import type { Bundle } from './bundle.js';
import { foreignSet, probeFailure } from './probe-outcome.js';
import { redeem } from './redeem.js';
import type { BoxKey } from './role-record.js';
import type { SealManager } from '../seal/index.js';
import type { StorageEngine } from '../storage/engine.js';
import type { CoreHooks } from './driver-options.js';
import { NotActiveNode, type PrimaryClient, type TlsMaterial } from './transport.js';

type Connect = (opts: { address: string; tls: TlsMaterial }) => PrimaryClient;

/**
 * update-primary with a wrapped token of another set is refused before the token is spent: our
 * JWTs name their set (`cluster_id`). Tokens without the claim go on to the usual check.
 */
export function refuseForeignJwt(token: string, kind: Kind, label: string, s: State): void {
  if (!isJwt(token.trim())) return;
  // The kind is inside the token: one of the other kind is refused before it is spent.
  const claimedKind = peekJwt(token.trim()).kind;
  if (claimedKind !== undefined && claimedKind !== kind) {
    throw new InvalidRequest(`the token activates ${claimedKind === 'dr' || claimedKind === 'performance' ? KIND_POLICY[claimedKind].label : 'another kind of'} replication, not ${label}; it was not redeemed`);
  }
  if (s.mode !== 'secondary') return;
  const claimed = peekJwt(token.trim()).cluster_id;
  if (claimed !== undefined && claimed !== s.clusterId) {
    throw new InvalidRequest(
      `the token belongs to replication set "${claimed.slice(0, 64)}" but this secondary belongs to "${s.clusterId}"; it was not redeemed`,
    );
  }
}

export interface RedeemDeps {
  readonly kind: Kind;
  readonly label: string;
  readonly state: State;
  readonly boxKey: BoxKey | undefined;
  readonly now: number;
  readonly version: string;
  readonly connect: Connect;
}

/** The bundle a token carries, refused unless it is this kind's, unexpired, and (before a wipe) accepted by its primary. */
export async function redeemActivation(d: RedeemDeps, req: { token: string; primaryApiAddr: string; caFile: string; caPath: string }): Promise<Bundle> {
  refuseForeignJwt(req.token, d.kind, d.label, d.state);
  const bundle = await redeem({
    token: req.token,
    primaryApiAddr: req.primaryApiAddr,
    caFile: req.caFile,
    caPath: req.caPath,
    boxKey: d.boxKey ? { publicKeyB64: d.boxKey.publicKeyB64, secretKey: new Uint8Array(Buffer.from(d.boxKey.secretKeyB64, 'base64')) } : undefined,
  });
  if (bundle.kind !== d.kind) throw new InvalidRequest(`the token is for ${KIND_POLICY[bundle.kind].label} replication, not ${d.label}`);
  // A sealed token never reaches the primary before the wipe: its expiry is checked here.
  if (bundle.expires_at !== undefined && bundle.expires_at <= d.now) {
    throw new InvalidRequest(`the activation token for "${bundle.secondary_id}" expired at ${new Date(bundle.expires_at).toISOString()}; ask the primary for a new one`);
  }
  // Activation wipes this node: the primary confirms first that it would accept this secondary.
  if (d.state.mode === 'disabled') await confirmWithPrimary({ bundle, connect: d.connect, version: d.version, tokenSpent: isJwt(req.token.trim()) });
  return bundle;
}

export interface ProbeDeps {
  readonly addrs: readonly string[];
  readonly tls: TlsMaterial;
  readonly secondaryId: string;
  readonly clusterId: string;
  readonly connect: Connect;
  readonly log: Logger;
}

/**
 * Pings each address in turn with this secondary's credentials; the first that answers as a
 * primary of its set goes to `found`, whose result is returned. An HA standby among them names
 * its active node, which is tried after the given ones. Else InvalidRequest saying what
 * each address did.
 */
export async function probePrimaries(d: ProbeDeps, found: (primary: { clusterAddr: string; apiAddr: string }) => Promise<void>): Promise<void> {
  const { log } = d;
  const reasons: string[] = [];
  // An HA standby's answer adds the active node it names to the addresses to try (once each).
  const addrs = [...d.addrs];
  for (const addr of addrs) {
    const client = d.connect({ address: addr, tls: d.tls });
    try {
      const info = await client.ping(d.secondaryId, 2000);
      if (info.clusterId !== d.clusterId) {
        log.warn({ addr, cluster_id: info.clusterId }, 'probed address belongs to another replication set');
        reasons.push(foreignSet(addr, info.clusterId));
        continue;
      }
      log.info({ addr }, 'update-primary: address answered');
      // Not awaited here, as before the move: the client closes now and `found`'s own failure is the caller's.
      return found({ clusterAddr: addr, apiAddr: info.apiAddr });
    } catch (e) {
      // Each address says what happened there (refused, not a primary, unreachable, a standby).
      reasons.push(probeFailure(addr, e));
      const named = e instanceof NotActiveNode ? e.activeClusterAddr : undefined;
      if (named !== undefined && !addrs.includes(named) && addrs.length < 2 * d.addrs.length + 1) addrs.push(named);
      log.info({ addr, err: (e as Error).message }, 'update-primary: address did not answer as a primary of the set');
    } finally {
      client.close();
    }
  }
  throw new InvalidRequest(`none of the update_primary_addrs answered as a primary of replication set ${d.clusterId} (${reasons.join('; ')})`);
}

/**
 * The activation's wipe: every key goes; with a bundle, this node then takes over the primary's
 * seal and keyring and the core reopens under them. The caller persists its record after.
 */
export async function wipeAndAdoptSeal(d: { readonly engine: StorageEngine; readonly seal: SealManager; readonly core: CoreHooks }, b: Bundle | undefined): Promise<void> {
  await d.engine.wipe();
  if (!b) return;
  await d.seal.adoptFromPrimaryUnsealed(
    { sealConfig: b.seal_config, encryptedKeyring: Buffer.from(b.encrypted_keyring, 'base64') },
    Buffer.from(b.keyring, 'base64'),
  );
  await d.core.reopen();
}
