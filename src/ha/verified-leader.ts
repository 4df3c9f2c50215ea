/**
 * The active node's API address as the active node itself states it over the cluster channel
 * (issue 26 item 8). The lock row's `api_addr` is a database value: whoever can update the row
 * could steer every standby's 307 `Location` and `sys/leader`, and a client following the
 * redirect would send its token there. A standby therefore redirects only to an address it asked
 * the node at the row's cluster address for, over mTLS with the cluster's HA certificates (which
 * only nodes that could unseal hold): that node must answer `is_self: true` to its own
 * `sys/leader`, and the address it names is the one used. A row pointing at a node that is not
 * active, or at something that is not a member, verifies nothing.
 *
 *   const leaders = new VerifiedLeader({ ask: (clusterAddr) => relay.ask(clusterAddr, LEADER_PROBE) });
 *   leaders.known('10.0.0.2:8201');          // the verified api_addr, or undefined (a check starts)
 *   await leaders.verify('10.0.0.2:8201');   // asks now (once at a time per address)
 */
import type { RawReply, RawRequest } from './ports.js';

/** What a standby sends the node at the row's cluster address: its own sys/leader. */
export const LEADER_PROBE: RawRequest = { method: 'GET', url: '/v1/sys/leader', headers: {}, body: undefined, remoteAddress: 'ha-standby' };

/** A verified address is asked again after this long (the node at an address may change). */
const FRESH_MS = 30_000;

export interface VerifiedLeaderOptions {
  /** Sends LEADER_PROBE to the node at `clusterAddr` over the HA cluster channel; undefined when it did not answer. */
  readonly ask: (clusterAddr: string) => Promise<RawReply | undefined>;
  readonly now?: () => number;
}

interface Verified {
  readonly apiAddr: string;
  readonly at: number;
}

export class VerifiedLeader {
  private readonly verified = new Map<string, Verified>();
  private readonly asking = new Map<string, Promise<string | undefined>>();
  private readonly now: () => number;

  constructor(private readonly o: VerifiedLeaderOptions) {
    this.now = o.now ?? Date.now;
  }

  /** The api_addr the active node at `clusterAddr` stated, if verified; otherwise starts a check. */
  known(clusterAddr: string): string | undefined {
    const v = this.verified.get(clusterAddr);
    if (v === undefined || this.now() - v.at > FRESH_MS) void this.verify(clusterAddr);
    return v?.apiAddr;
  }

  /** Asks the node at `clusterAddr` now (one question at a time per address). */
  verify(clusterAddr: string): Promise<string | undefined> {
    const inFlight = this.asking.get(clusterAddr);
    if (inFlight !== undefined) return inFlight;
    const asked = this.ask(clusterAddr).finally(() => this.asking.delete(clusterAddr));
    this.asking.set(clusterAddr, asked);
    return asked;
  }

  private async ask(clusterAddr: string): Promise<string | undefined> {
    const reply = await this.o.ask(clusterAddr).catch(() => undefined);
    const apiAddr = reply === undefined ? undefined : selfAddress(reply);
    if (apiAddr === undefined) {
      // Not active there (or not a member): what was verified for that address no longer holds.
      this.verified.delete(clusterAddr);
      return undefined;
    }
    this.verified.set(clusterAddr, { apiAddr, at: this.now() });
    return apiAddr;
  }
}

/** The node's own address from its sys/leader reply, when it says it is the active node. */
function selfAddress(reply: RawReply): string | undefined {
  if (reply.status !== 200) return undefined;
  try {
    const body = JSON.parse(reply.body.toString('utf8')) as { is_self?: unknown; leader_address?: unknown };
    return body.is_self === true && typeof body.leader_address === 'string' && body.leader_address !== '' ? body.leader_address : undefined;
  } catch {
    return undefined;
  }
}
