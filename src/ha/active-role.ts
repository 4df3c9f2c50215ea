/**
 * The active role of an HA node, what the controller starts on winning the lease and stops on
 * losing it: reload what the previous active node wrote (engine and vault caches), open writes
 * under the new epoch (the engine's term grows: the first fenced commit), make sure the cluster's
 * HA certificates exist, start replication, open the read leases and serve the HA service on the
 * cluster port. Stopping refuses writes first, revokes the read leases, then stops replication
 * (which closes the cluster port), then gives the port back to the standby's door (door.ts).
 *
 *   const role = new ActiveRole({ ha: () => controller, door, leases, engine, vault, replication, clusterListener, execute, log, now });
 *   new HaController({ ..., role });
 *   role.keepTls();                       // on the follow timer: certificates made again if a wipe took them
 *   await role.execute(relayedRequest);   // the active node's side of HA forwarding
 */
import type { Logger } from 'pino';
import { RelayFailed, StandbyWriteRefused, Unavailable } from '../core/errors.js';
import type { ActiveRole as Role, HaView } from './controller.js';
import type { HaDoor } from './door.js';
import type { ReadLeaseServer } from './read-lease-server.js';
import type { HaClusterListener, HaEngine, HaHandlers, HaReplication, HaVault, RawReply, RawRequest, RelayExecutor, Served } from './ports.js';
import { ensureHaTls, loadHaTls } from './tls.js';

export interface ActiveRoleOptions {
  /** The controller (made after the role: it takes the role). */
  readonly ha: () => { view(): HaView; isActive(): boolean };
  /** The standby's door on the cluster port (door.ts): held while the role runs. */
  readonly door: Pick<HaDoor, 'hold' | 'resume'>;
  /** The read leases this node grants its performance standbys while active (read-lease-server.ts). */
  readonly leases: Pick<ReadLeaseServer, 'open' | 'revokeAll' | 'accept'>;
  readonly engine: HaEngine;
  readonly vault: HaVault;
  readonly replication: HaReplication;
  /** The cluster listener of the replication unit's current run (the one HA forwarding joins). */
  readonly clusterListener: () => HaClusterListener | undefined;
  /** Runs a relayed request (the HTTP layer's); undefined until it listens. */
  readonly execute: () => RelayExecutor | undefined;
  readonly log: Logger;
  readonly now: () => number;
}

/** What a standby's writes are refused with. */
export const standbyRefusal = (): Error => new StandbyWriteRefused('this node is an HA standby and writes nothing itself: nothing was written (send the request to the active node, or let a standby relay it)');

export class ActiveRole implements Role {
  private serving: Served | undefined;
  private renewingTls: Promise<unknown> | undefined;

  /** What the active node serves its standbys on the cluster port. */
  private readonly handlers: HaHandlers = { forward: (req) => this.execute(req), readLease: (stream) => this.o.leases.accept(stream) };

  constructor(private readonly o: ActiveRoleOptions) {}

  async start(): Promise<void> {
    const o = this.o;
    const ms: Record<string, number> = {};
    let at = Date.now();
    const lap = (name: string): void => {
      const now = Date.now();
      ms[name] = now - at;
      at = now;
    };
    // The standby's door gives the cluster port back before the active role binds it.
    await o.door.hold();
    lap('door');
    const loaded = await o.engine.reload();
    o.engine.standby(undefined);
    lap('reload');
    // The first fenced commit of this term: every WAL entry from here on carries the new epoch.
    await o.engine.setEpoch(o.engine.epoch() + 1);
    lap('epoch');
    await o.vault.reopen();
    lap('caches');
    const tls = await ensureHaTls(o.vault.store(), o.now());
    lap('tls');
    await o.replication.start();
    lap('replication');
    const listener = o.clusterListener();
    if (listener === undefined) throw new Unavailable('the cluster listener is not available');
    o.leases.open();
    this.serving = await listener.serveHa({ tls: tls.server, handlers: this.handlers });
    lap('forwarding');
    o.log.info({ ms, loaded }, 'HA: active role started');
  }

  async stop(): Promise<void> {
    const o = this.o;
    // A sealed node is not a standby: it writes only what the sealed fence lets through.
    if (o.ha().view().mode !== 'sealed') o.engine.standby(standbyRefusal);
    this.serving = undefined;
    // Revoked over the streams before stopping replication closes the cluster port under them.
    await o.leases.revokeAll();
    await o.replication.stop().catch((e: unknown) => o.log.error({ err: e }, 'HA: stopping replication failed'));
    o.door.resume();
  }

  /**
   * Runs a request a standby relayed (the active node's side of HA forwarding), only while this
   * node is the active node: else the standby gets RelayFailed's 503 as the HTTP layer renders it.
   */
  async execute(req: RawRequest): Promise<RawReply> {
    const notActive = (): RelayFailed => new RelayFailed('not_written', 'this node is no longer the active node: nothing was run (retry through any node)');
    const run = this.o.execute();
    // The HTTP executor is handed over before the controller starts (unit.ts): never missing while active.
    if (run === undefined) throw notActive();
    return run(req, () => {
      if (!this.o.ha().isActive()) throw notActive();
    });
  }

  /**
   * The active node's HA certificates went with a wipe (a DR secondary's activation replaces the
   * store and its keyring): made again and served, so its standbys can relay and confirm it
   * (verified-leader.ts). Checked on the follow timer; a read of one cached key.
   */
  keepTls(): void {
    const o = this.o;
    if (this.renewingTls !== undefined || !o.ha().isActive() || this.serving === undefined) return;
    this.renewingTls = (async () => {
      if ((await loadHaTls(o.vault.store())) !== undefined) return;
      const tls = await ensureHaTls(o.vault.store(), o.now());
      const listener = o.clusterListener();
      if (!o.ha().isActive() || listener === undefined) return;
      // Replaces the registration served with the certificates that went.
      this.serving = await listener.serveHa({ tls: tls.server, handlers: this.handlers });
      o.log.info('HA: the cluster\'s HA certificates were made again (the store was replaced) and are served');
    })()
      .catch((e: unknown) => o.log.warn({ err: (e as Error).message }, 'HA: could not make the HA certificates again'))
      .finally(() => (this.renewingTls = undefined));
  }
}
