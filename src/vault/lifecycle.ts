/**
 * The seal lifecycle of a vault core, as observers see it: `opened` runs after every unseal (the
 * barrier is open and the mount, namespace and policy caches are loaded), `sealing` before every
 * seal (the barrier is still open). The node creates one before the core and hands it to the core
 * and to whatever must follow the seal (replication, generate-root), so nothing is written into
 * the core after it is built. Observers run one at a time in subscription order; a failing
 * observer fails the unseal or seal that ran it.
 *
 *   const lifecycle = new SealLifecycle();
 *   lifecycle.subscribe({ sealing: () => generation.forgetShares() });
 *   const core = new VaultCore({ storage, seal, license, hosted: false, lifecycle });
 */

/** Why the barrier opened: `initializing` is sys/init's own brief unseal (to write the root token). */
export interface OpenedContext {
  readonly initializing: boolean;
}

/** What an observer of the seal lifecycle may do at each step; both are optional. */
export interface SealObserver {
  opened?(context: OpenedContext): Promise<void>;
  sealing?(): Promise<void>;
}

export class SealLifecycle {
  private readonly observers: SealObserver[] = [];

  /** Adds an observer for the rest of the process's life. */
  subscribe(observer: SealObserver): void {
    this.observers.push(observer);
  }

  /** Called by the core after it opened the barrier and loaded its caches. */
  async opened(context: OpenedContext = { initializing: false }): Promise<void> {
    for (const o of this.observers) await o.opened?.(context);
  }

  /** Called by the core before it seals, while the barrier is still open. */
  async sealing(): Promise<void> {
    for (const o of this.observers) await o.sealing?.();
  }
}
