/**
 * Before secondary/enable wipes a node, it asks the primary named in the bundle whether it would
 * accept this secondary: one Ping over the cluster channel with the bundle's own credentials (an
 * HA standby named there answers with its active node's address, which is asked instead). The
 * primary's per-call check refuses a revoked, unknown or expired id (by its clock), and its answer
 * names its set and its version, so a secondary older than its primary (spec section 9) is refused
 * here too. Any refusal, and a primary that cannot be asked (asked again for CONFIRM_RETRY_MS),
 * leave the node as it was.
 *
 *   await confirmWithPrimary({ bundle, connect, version: VERSION });   // throws; wipe only after
 */
import { InvalidRequest, Unavailable } from '../core/errors.js';
import { compareVersions } from '../core/version.js';
import type { Bundle } from './bundle.js';
import { retrying } from './retrying.js';
import { ChannelError, ChannelReason, NotActiveNode, type PingInfo, type PrimaryClient, type TlsMaterial } from './transport.js';

export interface ConfirmRequest {
  readonly bundle: Bundle;
  readonly connect: (opts: { address: string; tls: TlsMaterial }) => PrimaryClient;
  /** The version this node runs. */
  readonly version: string;
  readonly timeoutMs?: number;
  /** How long a primary that cannot be asked is asked again (CONFIRM_RETRY_MS unless given). */
  readonly retryForMs?: number;
  /** The token was a wrapping token, spent by its redemption: a failure here says to ask for a new one. */
  readonly tokenSpent?: boolean;
}

/**
 * How long the confirmation is retried while the primary cannot be asked (no answer, or an HA
 * standby with no active node to name): the token was redeemed already, so an HA failover or a
 * missed lease renewal on the primary cluster should not cost the operator a new token.
 */
export const CONFIRM_RETRY_MS = 15_000;

/** Pings `addr`; an HA standby's answer (NotActiveNode) sends the ping once to the active node it names. */
async function pingFollowing(r: ConfirmRequest, addr: string, follow = true): Promise<{ info: PingInfo; addr: string }> {
  const b = r.bundle;
  const client = r.connect({ address: addr, tls: { caPem: b.ca_pem, certPem: b.cert_pem, keyPem: b.key_pem, serverName: b.server_name } });
  let named: string | undefined;
  try {
    return { info: await client.ping(b.secondary_id, r.timeoutMs ?? 5_000), addr };
  } catch (e) {
    named = e instanceof NotActiveNode ? e.activeClusterAddr : undefined;
    if (!follow || named === undefined) throw e;
  } finally {
    client.close();
  }
  return pingFollowing(r, named, false);
}

export async function confirmWithPrimary(r: ConfirmRequest): Promise<void> {
  const b = r.bundle;
  // A refusal, or an answer that broke the contract: the primary answered, and not with yes.
  const refusal = (e: unknown): e is ChannelError => e instanceof ChannelError && (e.refused || e.reason === ChannelReason.invalidArgument);
  const addr = b.primary_cluster_addr;
  let answer: Awaited<ReturnType<typeof pingFollowing>>;
  try {
    answer = await retrying(r.retryForMs ?? CONFIRM_RETRY_MS, () => pingFollowing(r, addr), (e) => !refusal(e));
  } catch (e) {
    if (refusal(e)) throw new InvalidRequest(`the primary at ${addr} refused secondary "${b.secondary_id}": ${e.messages.join('; ')}; nothing was wiped`);
    const spent = r.tokenSpent ? '; the activation token was spent when it was redeemed: ask the primary for a new one once it answers' : ', retry when it answers';
    throw new Unavailable(`cannot reach the primary at ${addr} over the cluster port to confirm the activation before wiping: ${(e as Error).message}; nothing was wiped${spent}`);
  }
  const { info, addr: answered } = answer;
  if (info.clusterId !== b.cluster_id) {
    throw new InvalidRequest(`the primary at ${answered} belongs to replication set "${info.clusterId}", not the token's "${b.cluster_id}"; nothing was wiped`);
  }
  if (compareVersions(info.version, r.version) > 0) {
    throw new InvalidRequest(
      `the primary runs ${info.version} but this node runs ${r.version}: upgrade this node first (a secondary must never run an older version than its primary); nothing was wiped`,
    );
  }
}
