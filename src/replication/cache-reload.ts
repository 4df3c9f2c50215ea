/**
 * Coalesced reload of the vault core's caches on a secondary that serves reads, as replicated data
 * lands (moved out of driver.ts), and on an HA standby before it answers a token itself
 * (src/node/ha.ts): one reload running, at most one queued behind it.
 *
 *   const reload = new CoalescedReload(() => core.reload(), (e) => log.warn(...));
 *   reload.soon();              // after each applied batch
 *   await reload.settled();     // what was applied so far is visible
 *   await reload.fresh();       // a reload that started after this call finished (or its error)
 */
export class CoalescedReload {
  private reloading: Promise<void> | undefined;
  private queued = false;
  /** The last finished reload's error, undefined when it succeeded. */
  private failed: unknown;

  constructor(
    private readonly reload: () => Promise<void>,
    private readonly onError: (e: unknown) => void,
  ) {}

  soon(): void {
    if (this.reloading) {
      this.queued = true;
      return;
    }
    this.reloading = this.reload()
      .then(() => (this.failed = undefined))
      .catch((e: unknown) => {
        this.failed = e;
        this.onError(e);
      })
      .finally(() => {
        this.reloading = undefined;
        if (this.queued) {
          this.queued = false;
          this.soon();
        }
      });
  }

  /** Resolves once replicated data applied so far is visible to the core (caches reloaded). */
  async settled(): Promise<void> {
    while (this.reloading) await this.reloading;
  }

  /**
   * Resolves once a reload that started after this call has finished: the caches hold what
   * storage held when it was called. Rejects with that reload's error when it failed.
   */
  async fresh(): Promise<void> {
    this.soon();
    await this.settled();
    if (this.failed !== undefined) throw this.failed;
  }

  /** While a reload runs, the wait for it; undefined otherwise (no cost on the request path). */
  pending(): Promise<void> | undefined {
    return this.reloading ? this.settled() : undefined;
  }
}
