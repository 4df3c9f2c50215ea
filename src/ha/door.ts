/**
 * The cluster port of an HA standby (src/replication/standby-door.ts says what it answers): open
 * while the node is an unsealed standby and its active role is not running, closed before the
 * active role binds the same port, and open again once that role has stopped. It serves each
 * kind its cluster is primary of under that kind's own TLS identity, re-read every `refreshMs`
 * (a kind enabled, disabled or re-keyed on the active node is served as it is now). It does not
 * serve HA forwarding: a relay's handshake under the HA server name fails, so the relaying
 * standby reads "not sent" and tries the active node it looks up next, as before.
 *
 *   const door = new HaDoor({ address: clusterAddr, registrations, listen, log });
 *   door.want(true);            // standby or cooldown
 *   await door.hold();          // the active role starts: closed, and kept closed
 *   door.resume();              // the active role stopped: open again if wanted
 *   await door.close();         // the node stops
 */
import type { Logger } from 'pino';
import type { ClusterListener, DoorRegistration, ReplicationServer } from '../replication/index.js';
import type { DoorListen } from './ports.js';

export interface HaDoorOptions {
  /** host:port: this node's cluster address (the active role binds it too). */
  readonly address: string;
  readonly registrations: () => Promise<DoorRegistration[]>;
  /** Makes a listener on `address` (one that refuses at once: a short close grace). */
  readonly listen: DoorListen;
  readonly log: Logger;
  /** How often the kinds served are read again. Default 2000 ms. */
  readonly refreshMs?: number;
}

export class HaDoor {
  private wanted = false;
  private held = false;
  private closed = false;
  private server: ClusterListener | undefined;
  private readonly served = new Map<string, { version: string; handle: ReplicationServer }>();
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: HaDoorOptions) {}

  /** Whether the node is a standby that should answer (it is opened unless the active role holds the port). */
  want(open: boolean): void {
    this.wanted = open;
    void this.settle();
  }

  /** The active role is about to bind the port: resolves once the door is closed. */
  hold(): Promise<void> {
    this.held = true;
    return this.settle();
  }

  /** The active role has stopped and released the port. */
  resume(): void {
    this.held = false;
    void this.settle();
  }

  /** For good (the node stops). */
  close(): Promise<void> {
    this.closed = true;
    return this.settle();
  }

  /** Whether the door listens now (tests). */
  get open(): boolean {
    return this.server !== undefined;
  }

  /** One change at a time, in order: open and refresh, or close. */
  private settle(): Promise<void> {
    const run = this.chain.then(() => (this.wanted && !this.held && !this.closed ? this.refresh() : this.shut()));
    this.chain = run.catch((e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'HA standby: the cluster port could not be served; retrying'));
    return this.chain;
  }

  private async refresh(): Promise<void> {
    this.server ??= this.o.listen(this.o.address);
    if (this.timer === undefined) {
      this.timer = setInterval(() => void this.settle(), this.o.refreshMs ?? 2_000);
      this.timer.unref();
    }
    const regs = await this.o.registrations();
    for (const [kind, s] of [...this.served]) {
      if (regs.some((r) => r.kind === kind)) continue;
      this.served.delete(kind);
      await s.handle.close();
    }
    for (const r of regs) {
      if (this.served.get(r.kind)?.version === r.version) continue;
      const handle = await this.server.serve({ kind: r.kind, tls: r.tls, service: r.service });
      this.served.set(r.kind, { version: r.version, handle });
      this.o.log.info({ kind: r.kind, cluster_addr: handle.address }, 'HA standby: answering secondaries on the cluster port with the active node\'s address');
    }
  }

  private async shut(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    const server = this.server;
    this.server = undefined;
    this.served.clear();
    await server?.close();
  }
}
