/**
 * The cluster addresses of a primary cluster, on both ends. A primary cluster is several nodes
 * (HA over one shared store) of which one at a time is active and serves the cluster port; they
 * share the data, the WAL, the Merkle index, the role record and the TLS material, so a secondary
 * may stream from whichever node is active, from its own guard, without a resync.
 *
 * The primary advertises every node's address in its Bootstrap, Heartbeat and Ping replies
 * (`advertisedAddrs`). The secondary keeps what it learns (`PrimaryAddrs`): a bounded list that is
 * persisted as `knownPrimaryClusterAddrs` (role-record.ts) and shown as
 * `known_primary_cluster_addrs`, and a cursor its loop dials: an unreachable address moves it to
 * the next one (round robin), a successful handshake makes the cursor the connected address.
 *
 *   const addrs = new PrimaryAddrs({ configured: '10.0.0.5:8201', known: rec.knownPrimaryClusterAddrs });
 *   client = connect(addrs.current);           // dial
 *   addrs.markConnected(); addrs.learn(info.clusterAddrs ?? []);   // after the handshake
 *   addrs.advance();                           // unreachable: the next address
 *   addrs.jumpTo(e.activeClusterAddr);         // a standby named the active node: that one next
 */
import { clusterHostPort, splitHostPort } from '../core/cluster-addr.js';

/** Most addresses a secondary keeps of its primary cluster, and a primary advertises. */
export const MAX_KNOWN_PRIMARY_ADDRS = 16;

/**
 * Replies of the primary (each Bootstrap and Heartbeat, one a second) that must leave an address
 * out, in a row, before a secondary forgets it. Long enough that a membership list that lacks a
 * node for a moment (a restart, a late heartbeat to the lease table) does not churn the persisted
 * list; short enough that a node removed from the cluster stops costing a connection attempt per
 * round within about half a minute. A primary that advertises nothing (an older one) never makes
 * an address absent: it says nothing about the others.
 */
export const ABSENT_REPLIES_BEFORE_FORGET = 30;

/** host:port, or undefined for what cannot be dialled (not an address, port 0). */
function dialable(raw: string): string | undefined {
  const hp = clusterHostPort(raw);
  if (hp === undefined || hp === '') return undefined;
  return (splitHostPort(hp)?.port ?? 0) > 0 ? hp : undefined;
}

/** Distinct dialable addresses, in order, at most `max`. */
function distinct(addrs: readonly string[], max = MAX_KNOWN_PRIMARY_ADDRS): string[] {
  const out: string[] = [];
  for (const a of addrs) {
    const hp = dialable(a);
    if (hp !== undefined && !out.includes(hp)) out.push(hp);
    if (out.length >= max) break;
  }
  return out;
}

/**
 * What a primary advertises: the address its secondaries are told (`own`: the operator's
 * primary_cluster_addr or this node's listener) first, then every node's of its cluster, distinct
 * and bounded.
 */
export function advertisedAddrs(own: string, cluster: readonly string[] | undefined): string[] {
  return distinct([own, ...(cluster ?? [])]);
}

/** What changed in a secondary's list of addresses (the caller persists when `changed`). */
export interface AddrsSnapshot {
  readonly known: readonly string[];
  /** The address of the last successful handshake; '' before any. */
  readonly connected: string;
}

export interface PrimaryAddrsOptions {
  /** The address activation or update-primary gave: always kept, dialled first unless `connected` is known. */
  readonly configured: string;
  /** What was persisted. */
  readonly known?: readonly string[];
  /** The address of the last handshake before a restart (persisted); dialled first. */
  readonly connected?: string;
}

/**
 * A secondary's addresses of its primary cluster and the cursor its loop dials. The configured
 * address and the connected one are never forgotten; at most MAX_KNOWN_PRIMARY_ADDRS are kept
 * (the configured one first, new ones appended; over the bound the longest absent go).
 */
export class PrimaryAddrs {
  private list: string[];
  private cursor = 0;
  private connectedAddr: string;
  private readonly configured: string;
  /** Consecutive replies that left each address out (in memory: a restart starts counting anew). */
  private readonly absent = new Map<string, number>();

  constructor(o: PrimaryAddrsOptions) {
    this.configured = dialable(o.configured) ?? o.configured;
    const connected = o.connected !== undefined ? dialable(o.connected) : undefined;
    this.connectedAddr = connected ?? '';
    this.list = distinct([this.configured, ...(connected !== undefined ? [connected] : []), ...(o.known ?? [])]);
    // A configured address that is not host:port (a test transport's own scheme) is still the one to dial.
    if (!this.list.includes(this.configured)) this.list.unshift(this.configured);
    this.list = this.list.slice(0, MAX_KNOWN_PRIMARY_ADDRS);
    // The order stays as persisted; the cursor starts on the node last connected to.
    this.cursor = Math.max(0, this.list.indexOf(this.connectedAddr));
  }

  /** The address to dial now. */
  get current(): string {
    return this.list[this.cursor] ?? this.configured;
  }

  /** The address of the last successful handshake ('' before any). */
  get connected(): string {
    return this.connectedAddr;
  }

  get known(): readonly string[] {
    return this.list;
  }

  get size(): number {
    return this.list.length;
  }

  snapshot(): AddrsSnapshot {
    return { known: [...this.list], connected: this.connectedAddr };
  }

  /** The current address did not answer: the next one is dialled next (round robin). */
  advance(): void {
    this.cursor = (this.cursor + 1) % Math.max(1, this.list.length);
  }

  /**
   * A node of the primary cluster said the active node is at `addr` (an HA standby's answer): it
   * is dialled next, joining the list when new (bounded: the longest-absent unkept address makes
   * room, as `learn` does). False when `addr` cannot be dialled (the cursor stays).
   */
  jumpTo(addr: string): boolean {
    const hp = dialable(addr);
    if (hp === undefined) return false;
    if (!this.list.includes(hp)) {
      if (this.list.length >= MAX_KNOWN_PRIMARY_ADDRS) {
        const keep = this.kept();
        const drop = this.longestAbsent(this.list, (a) => !keep.has(a));
        if (drop === undefined) return false;
        this.list.splice(this.list.indexOf(drop), 1);
        this.absent.delete(drop);
      }
      this.list.push(hp);
    }
    this.cursor = this.list.indexOf(hp);
    return true;
  }

  /** Never forgotten nor dropped: the configured, the connected and the current address. */
  private kept(): Set<string> {
    return new Set([this.configured, this.connectedAddr, this.current]);
  }

  /** Of the addresses `may` lets go, the one left out of the most replies in a row. */
  private longestAbsent(list: readonly string[], may: (a: string) => boolean): string | undefined {
    return list.filter(may).sort((x, y) => (this.absent.get(y) ?? 0) - (this.absent.get(x) ?? 0))[0];
  }

  /** The handshake at the current address succeeded. True when that changed the connected address. */
  markConnected(): boolean {
    const now = this.current;
    if (now === this.connectedAddr) return false;
    this.connectedAddr = now;
    return true;
  }

  /**
   * A reply of the primary at the current address named `advertised` (empty: nothing said). New
   * addresses join the list; one left out of ABSENT_REPLIES_BEFORE_FORGET replies in a row is
   * forgotten, unless it is the configured or the connected one. True when the list changed.
   */
  learn(advertised: readonly string[]): boolean {
    const named = distinct(advertised);
    if (named.length === 0) return false;
    const current = this.current;
    const keep = this.kept();
    const before = this.list.join('\n');
    const next: string[] = [];
    for (const a of this.list) {
      if (named.includes(a) || keep.has(a)) {
        this.absent.delete(a);
        next.push(a);
        continue;
      }
      const n = (this.absent.get(a) ?? 0) + 1;
      if (n >= ABSENT_REPLIES_BEFORE_FORGET) {
        this.absent.delete(a);
        continue;
      }
      this.absent.set(a, n);
      next.push(a);
    }
    for (const a of named) if (!next.includes(a)) next.push(a);
    // Over the bound: the longest-absent addresses go first, never a kept one.
    while (next.length > MAX_KNOWN_PRIMARY_ADDRS) {
      const drop = this.longestAbsent(next, (a) => !keep.has(a) && !named.includes(a)) ?? next.filter((a) => !keep.has(a)).at(-1);
      if (drop === undefined) break;
      next.splice(next.indexOf(drop), 1);
      this.absent.delete(drop);
    }
    this.list = next;
    // The cursor stays on the address being used.
    this.cursor = Math.max(0, next.indexOf(current));
    return next.join('\n') !== before;
  }
}
