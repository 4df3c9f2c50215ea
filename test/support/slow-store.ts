/**
 * An in-memory store that yields to the event loop before every operation, so interleavings a
 * real disk allows (two first mints, a read between two commits) happen in unit tests. It keeps
 * every commit's ops for assertions.
 *
 *   const store = new SlowStore();
 *   ...; expect(store.commits).toHaveLength(1);
 */
import { MapStore, type Op } from '../../src/storage/store.js';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

export class SlowStore extends MapStore {
  commits: Op[][] = [];
  override async get(key: string): Promise<Buffer | undefined> {
    await tick();
    return super.get(key);
  }
  override async list(prefix: string): Promise<string[]> {
    await tick();
    return super.list(prefix);
  }
  override async commit(ops: readonly Op[]): Promise<void> {
    await tick();
    this.commits.push([...ops]);
    return super.commit(ops);
  }
}
