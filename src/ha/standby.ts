/**
 * What an HA standby does with a client's request (WIRE.md §9): the few paths about this node
 * itself (health, seal status, unseal, seal, init, leader, metrics) it answers; as a performance
 * standby it answers reads too, once its read barrier says it is current (standby-reads.ts), and
 * relays them when it cannot tell; every other request it relays to the active node over the
 * cluster port and answers what the active node answered. With a non-empty
 * `X-Vault-No-Request-Forwarding` it answers 307 to the active node's api_addr instead; with no
 * active node known, 503 in Vault's words.
 *
 *   const gate = new StandbyRelay({ ha, loadTls: () => loadHaTls(core.store()), connect: connectHa });
 *   startHttp({ ..., standby: gate });
 */
import { NO_ACTIVE_NODE, NoActiveNode, RelayFailed, StandbyNotCurrent } from '../core/errors.js';
import { ChannelError, ChannelReason } from '../replication/index.js';
import type { TlsMaterial } from '../replication/index.js';
import type { RawReply, RawRequest } from './ports.js';
import type { HaTls } from './tls.js';

/** Paths (after /v1/) a standby answers itself: they are about this node. */
const LOCAL = new Set(['sys/health', 'sys/seal-status', 'sys/unseal', 'sys/seal', 'sys/init', 'sys/leader', 'sys/metrics']);

/** Of those, the ones a token authorizes: answered only once the standby is current (a revoked token is refused). */
const LOCAL_WITH_TOKEN = new Set(['sys/seal', 'sys/metrics']);

type Leader = { readonly apiAddr: string; readonly clusterAddr: string };

/** This node has become the active node while the request waited: it answers itself. */
const SELF = Symbol('self');

/** The relay never reached the node: nothing was sent. */
const NOT_SENT = Symbol('not sent');

/** A relayed request gets this long for its answer. */
const RELAY_DEADLINE_MS = 60_000;

export interface RelayClient {
  forward(req: RawRequest, deadlineMs: number, signal?: AbortSignal): Promise<RawReply>;
  close(): void;
}

export interface StandbyRelayOptions {
  /**
   * undefined: this node answers (sealed, active, or HA off). `starting`: this node is becoming
   * the active node (it answers once `started` resolves true). Else where the active node is, if known.
   */
  readonly relayTarget: () => { leader: { apiAddr: string; clusterAddr: string } | undefined } | { starting: () => Promise<boolean> } | undefined;
  /** Reads the lock row afresh: the active node now, if any (undefined while none is). */
  readonly findLeader: () => Promise<{ apiAddr: string; clusterAddr: string } | undefined>;
  /** How long a request waits for an active node to appear before the 503 (a takeover's length). */
  readonly waitForLeaderMs: number;
  readonly loadTls: () => Promise<HaTls | undefined>;
  readonly connect: (o: { address: string; tls: TlsMaterial }) => RelayClient;
  /**
   * Whether this standby answers reads itself (a performance standby: unsealed, following, not
   * of a DR secondary cluster); false relays them as every other request.
   */
  readonly servesReads: () => boolean;
  /**
   * Resolves once this standby holds everything storage held when it was called (standby-reads.ts);
   * rejects when it cannot tell.
   */
  readonly current: () => Promise<void>;
  /**
   * The API address the active node at a cluster address states over the cluster channel
   * (verified-leader.ts), or undefined when it cannot be verified: a 307 goes only there, never to
   * the lock row's `api_addr`.
   */
  readonly verifiedApiAddr: (clusterAddr: string) => Promise<string | undefined>;
}

function stale(e: unknown): string {
  return `this standby could not bring itself up to the shared database (${e instanceof Error ? e.message : String(e)})`;
}

/** Whether X-Vault-No-Request-Forwarding asks for a redirect: present with a non-empty value, as Vault's test. */
export function noForwarding(value: string | undefined): boolean {
  return value !== undefined && value.trim() !== '';
}

function pathOf(url: string): string {
  const path = url.split('?')[0] ?? '';
  return path.replace(/^\/v1\//, '').replace(/\/+$/, '');
}

/**
 * What the HTTP layer's standby gate calls (src/http/standby.ts declares it). A reply is what the
 * active node answered (or a 307); a request this relay cannot carry rejects with a typed error
 * (NoActiveNode, RelayFailed, StandbyNotCurrent: 503 in the HTTP error table).
 */
export class StandbyRelay {
  private tls: HaTls | undefined;
  private client: { address: string; relay: RelayClient } | undefined;

  constructor(private readonly o: StandbyRelayOptions) {}

  divert(req: RawRequest, local: () => boolean): Promise<RawReply | undefined> | undefined {
    if (!req.url.startsWith('/v1/')) return undefined;
    const path = pathOf(req.url);
    if (LOCAL.has(path) && !LOCAL_WITH_TOKEN.has(path)) return undefined;
    const target = this.o.relayTarget();
    if (target === undefined) return undefined;
    if ('starting' in target) return this.whenStarted(target.starting);
    if (LOCAL.has(path)) {
      return this.o.current().then(
        () => undefined,
        (e: unknown) => {
          throw new StandbyNotCurrent(`${stale(e)}; nothing was done: retry`, { cause: e });
        },
      );
    }
    // A read this standby cannot answer current goes to the active node instead (never stale).
    if (this.o.servesReads() && local()) return this.o.current().then(() => undefined, () => this.answer(target.leader, req));
    return this.answer(target.leader, req);
  }

  /** Relays `req` to the active node (or answers it here, if this node has become the active node meanwhile). */
  async relay(req: RawRequest): Promise<RawReply> {
    const target = this.o.relayTarget();
    if (target === undefined) throw new RelayFailed('not_written', 'this node stopped being a standby while it answered the request; nothing was written: retry');
    const reply = 'starting' in target ? await this.whenStarted(target.starting) : await this.answer(target.leader, req);
    if (reply === undefined) throw new RelayFailed('not_written', 'this node became the active node while it answered the request; nothing was written: retry');
    return reply;
  }

  /** This node won the lease and is loading: it answers itself once it serves. */
  private async whenStarted(starting: () => Promise<boolean>): Promise<RawReply | undefined> {
    if (await starting()) return undefined;
    throw new NoActiveNode(`${NO_ACTIVE_NODE}: this node was becoming the active node and stopped; retry`);
  }

  private async answer(known: Leader | undefined, req: RawRequest): Promise<RawReply | undefined> {
    // During a takeover no node is active for a moment: wait for one rather than fail at once.
    const leader = known ?? (await this.waitForLeader());
    if (leader === SELF) return undefined;
    if (typeof leader === 'string') throw new NoActiveNode(leader);
    // Vault tests the header with Header.Get(...) != "" (http/handler.go): any value but an empty one redirects.
    if (noForwarding(req.headers['x-vault-no-request-forwarding'])) {
      const apiAddr = await this.o.verifiedApiAddr(leader.clusterAddr);
      if (apiAddr === undefined) {
        throw new NoActiveNode(`${NO_ACTIVE_NODE}: the node at ${leader.clusterAddr} did not confirm over the cluster port that it is the active node, so this standby does not redirect (nothing was sent)`);
      }
      return { status: 307, headers: { location: `${apiAddr.replace(/\/+$/, '')}${req.url}` }, body: Buffer.alloc(0) };
    }
    const first = await this.relayTo(leader.clusterAddr, req);
    if (first !== NOT_SENT) return first;
    // The node the row named did not answer (it died, or another took over before the request
    // left): nothing was sent, so wait for the next active node and relay once more.
    const next = await this.waitForLeader(leader.clusterAddr);
    if (next === SELF) return undefined;
    if (typeof next === 'string') throw new NoActiveNode(`${next} (the active node at ${leader.clusterAddr} is not reachable; nothing was sent to it, nothing was written)`);
    const second = await this.relayTo(next.clusterAddr, req);
    if (second === NOT_SENT) throw new NoActiveNode(`${NO_ACTIVE_NODE} (the active node at ${next.clusterAddr} is not reachable; nothing was sent to it, nothing was written)`);
    return second;
  }

  /**
   * The active node once one is known (other than `not`), SELF when this node has become it, or
   * at the deadline the 503's message (saying why, when the lock row could not be read).
   */
  private async waitForLeader(not?: string): Promise<Leader | typeof SELF | string> {
    const until = Date.now() + this.o.waitForLeaderMs;
    let problem: string | undefined;
    for (;;) {
      const here = this.o.relayTarget();
      if (here === undefined) return SELF;
      if ('starting' in here) return (await here.starting()) ? SELF : NO_ACTIVE_NODE;
      let found: Leader | undefined;
      try {
        found = await this.o.findLeader();
        problem = undefined;
      } catch (e) {
        problem = e instanceof Error ? e.message : String(e);
      }
      if (found !== undefined && found.clusterAddr !== not) return found;
      if (Date.now() >= until) return problem === undefined ? NO_ACTIVE_NODE : `${NO_ACTIVE_NODE}: the HA lock in storage cannot be read (${problem})`;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Sends `req` to the node at `address` over the HA channel; undefined when it was not sent, rejects when its answer was lost. */
  async ask(address: string, req: RawRequest): Promise<RawReply | undefined> {
    const reply = await this.relayTo(address, req);
    return reply === NOT_SENT ? undefined : reply;
  }

  private async relayTo(address: string, req: RawRequest): Promise<RawReply | typeof NOT_SENT> {
    this.tls ??= await this.o.loadTls();
    if (this.tls === undefined) throw new NoActiveNode(`${NO_ACTIVE_NODE}: no node of this cluster has been active yet`);
    if (this.client?.address !== address) {
      this.client?.relay.close();
      this.client = { address, relay: this.o.connect({ address, tls: this.tls.client }) };
    }
    // Once another node holds the lease, the one this request went to can commit nothing more
    // (the fence): a request not yet sent goes to the new one, and one in flight to a frozen node
    // has a settled outcome, so the client is told at once rather than at the deadline.
    // This node itself taking over counts too: the node the request waits on (a connection not
    // yet ready to a node that stopped) will never answer it, and this node now can.
    const moved = new AbortController();
    const watch = setInterval(() => {
      const here = this.o.relayTarget();
      if (here === undefined || 'starting' in here) {
        moved.abort();
        return;
      }
      this.o.findLeader().then(
        (now) => {
          if (now !== undefined && now.clusterAddr !== address) moved.abort();
        },
        () => undefined,
      );
    }, 100);
    try {
      return await this.client.relay.forward(req, RELAY_DEADLINE_MS, moved.signal);
    } catch (e) {
      if (e instanceof ChannelError && e.reason === ChannelReason.notSent) return NOT_SENT;
      if (moved.signal.aborted) {
        throw new RelayFailed('unknown', `the active node at ${address} stopped answering and another node took over while the request was in flight; the outcome is unknown: read it back before retrying`, { cause: e });
      }
      if (e instanceof ChannelError && e.refused) {
        throw new RelayFailed('not_written', `the active node at ${address} refused the relayed request (${e.message}): nothing was written`, { cause: e });
      }
      const why = e instanceof Error ? e.message : String(e);
      throw new RelayFailed('unknown', `the request was relayed to the active node at ${address} but its answer was lost (${why}); the outcome is unknown: read it back before retrying`, { cause: e });
    } finally {
      clearInterval(watch);
    }
  }

  close(): void {
    this.client?.relay.close();
    this.client = undefined;
  }
}
