/**
 * Serialises read-modify-write sequences per key, like Vault's per-key lock table: a KV v2 write
 * reads metadata, decides the next version and commits; two interleaved writers would otherwise
 * both produce "version n+1" and break check-and-set.
 *
 *   const locks = new KeyedMutex();
 *   await locks.run('data:app/db', async () => { ... });
 */
export class KeyedMutex {
  /** The tail of each key's queue; an entry exists only while someone holds or awaits the key. */
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => held);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys currently held or awaited (for tests and leak checks). */
  get size(): number {
    return this.tails.size;
  }
}
