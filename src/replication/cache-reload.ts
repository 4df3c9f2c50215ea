/**
 * Coalesced reload of the vault core's caches on a secondary that serves reads, as replicated data
 * lands (moved out of driver.ts): one reload running, at most one queued behind it.
 *
 *   const reload = new CoalescedReload(() => core.reload(), (e) => log.warn(...));
 *   reload.soon();              // after each applied batch
 *   await reload.settled();     // what was applied so far is visible
 */
export class CoalescedReload {
  private reloading: Promise<void> | undefined;
  private queued = false;

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
      .catch(this.onError)
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

  /** While a reload runs, the wait for it; undefined otherwise (no cost on the request path). */
  pending(): Promise<void> | undefined {
    return this.reloading ? this.settled() : undefined;
  }
}
