/**
 * Who hears about the WAL's last index moving: DR and performance streamers wake on it.
 *
 *   const off = listeners.add((last) => streamer.wake(last));
 *   listeners.notify(42n);   // after a batch is durable, never before
 *   off();
 *
 * A listener that throws is skipped: its failure is its own, and a commit that is already
 * durable must not be reported as failed because of it.
 */
export class CommitListeners {
  private readonly listeners = new Set<(lastIndex: bigint) => void>();

  /** Returns unsubscribe. */
  add(listener: (lastIndex: bigint) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(last: bigint): void {
    for (const l of this.listeners) {
      try {
        l(last);
      } catch {
        // A listener's failure is the listener's to handle; it must not fail a durable commit.
      }
    }
  }
}
