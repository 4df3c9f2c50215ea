/**
 * An in-memory cache refreshed from storage, with the two rules every such cache here needs:
 * loads run one at a time in call order (two overlapping reloads of a performance secondary could
 * otherwise finish out of order and install the older table), and a load that overlapped a local
 * change (a local mount enabled while upstream data lands) reads again instead of installing what
 * it read before that change.
 *
 *   const reload = new SerialReload(() => readTable(store), (t) => (this.table = t));
 *   await reload.load();
 *   await store.commit(ops); reload.changed(); this.table = apply(this.table);
 */
export class SerialReload<T> {
  /** Bumped by every change this node makes, so a load that raced one reads again. */
  private generation = 0;
  private loading: Promise<void> = Promise.resolve();

  constructor(
    private readonly read: () => Promise<T>,
    private readonly install: (value: T) => void,
  ) {}

  load(): Promise<void> {
    const run = this.loading.then(() => this.loadOnce());
    this.loading = run.catch(() => undefined);
    return run;
  }

  /** A local change was committed: a load in flight reads again. */
  changed(): void {
    this.generation++;
  }

  private async loadOnce(): Promise<void> {
    for (;;) {
      const started = this.generation;
      const value = await this.read();
      if (started !== this.generation) continue;
      this.install(value);
      return;
    }
  }
}
