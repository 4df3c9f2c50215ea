/**
 * A per-key async mutex: callers holding the same key run one after another, in arrival order;
 * different keys never wait for each other. In memory only: one per owner (the token store, each KV engine).
 *
 *   const release = await locks.acquire(hash);
 *   try { ...read, modify, commit... } finally { release(); }
 */
export class KeyedMutex {
  /** The promise the next arrival on a key waits for; absent when nobody holds the key. */
  readonly #tails = new Map<string, Promise<void>>();

  async acquire(key: string): Promise<() => void> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let open!: () => void;
    const mine = new Promise<void>((resolve) => {
      open = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      open();
      // Forget the key when nobody queued behind us, so the map does not grow with every token.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    };
  }

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire(key);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Keys currently held or waited for (for tests and metrics). */
  get size(): number {
    return this.#tails.size;
  }
}
