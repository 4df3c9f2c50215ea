/**
 * What update-primary tells the operator about each address it probed (spec 4.4): the sentence
 * says what happened there, by the channel's typed reason (transport.ts: calls reject with a
 * ChannelError whose `reason` is one of ChannelReason), never by parsing its message.
 *
 *   probeFailure('10.0.0.5:8201', err)      // "https://10.0.0.5:8201 did not answer: ..."
 *   foreignSet('10.0.0.5:8201', 'set-2')    // "https://10.0.0.5:8201 answered as a primary of another replication set (set-2)"
 */
import { vaultClusterAddr } from '../core/cluster-addr.js';
import { ChannelError, NotActiveNode } from './transport.js';

const DETAIL_MAX = 200;

function detail(e: unknown): string {
  const m = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').trim();
  return m.length > DETAIL_MAX ? `${m.slice(0, DETAIL_MAX)}...` : m;
}

/** One sentence for an address whose ping failed. */
export function probeFailure(addr: string, e: unknown): string {
  const at = vaultClusterAddr(addr);
  if (e instanceof NotActiveNode) return `${at} answered as an HA standby of the primary cluster: ${detail(e)}`;
  switch (e instanceof ChannelError ? e.reason : undefined) {
    case 'permission_denied':
      return `${at} answered and refused this secondary: ${detail(e)}`;
    case 'failed_precondition':
      return `${at} answered but is not serving as a primary of this replication set: ${detail(e)}`;
    case 'invalid_argument':
    case 'internal':
      return `${at} answered with an error: ${detail(e)}`;
    case 'deadline':
      return `${at} did not answer within the probe deadline: ${detail(e)}`;
    default:
      // unavailable (or no ChannelError at all): nothing listening, or no TLS handshake with this
      // set's CA and server name (a node that is not a primary of this set serves no certificate
      // for it).
      return `${at} could not be reached as a primary of this replication set (connection or TLS handshake failed): ${detail(e)}`;
  }
}

/** The address answered the ping, as a primary of another set. */
export function foreignSet(addr: string, clusterId: string): string {
  return `${vaultClusterAddr(addr)} answered as a primary of another replication set (${clusterId.slice(0, 64)})`;
}
