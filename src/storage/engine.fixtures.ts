/**
 * Hand-written fakes for the engine's tests (no jest.mock): an AES-256-GCM cipher, a backend
 * wrapper that can fail or hold batches, and an independent from-scratch Merkle root.
 *
 *   const backend = new ControlledBackend(new MemoryBackend());
 *   backend.failing = true;                     // the next batches throw
 *   backend.readFault = true;                   // reads throw BackendFault (a corrupt medium)
 *   const gate = backend.hold();                // batches wait until gate.release()
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { compositeRoot, leafHash, locate, pageHash, subtreeRoot, valueHash, xorInto } from '../core/merkle.js';
import { BackendFault, type Backend, type BatchOp, type RangeOptions, type Snapshot } from './backend.js';
import type { ValueCipher } from './barrier.js';
import { classify, treeOf } from './keyspace.js';

export function testCipher(key: Buffer = randomBytes(32)): ValueCipher {
  return {
    encrypt(plain, aad) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      c.setAAD(aad);
      const body = Buffer.concat([c.update(plain), c.final()]);
      return Buffer.concat([iv, c.getAuthTag(), body]);
    },
    decrypt(ct, aad) {
      const d = createDecipheriv('aes-256-gcm', key, ct.subarray(0, 12));
      d.setAAD(aad);
      d.setAuthTag(ct.subarray(12, 28));
      return Buffer.concat([d.update(ct.subarray(28)), d.final()]);
    },
  };
}

export class BatchFailed extends Error {}

/** Delegates to `inner`; batches can be made to fail or to wait for a gate. */
export class ControlledBackend implements Backend {
  failing = false;
  readFault = false;
  batchCalls = 0;
  private gate: Promise<void> | undefined;

  constructor(readonly inner: Backend) {}

  /** Holds every batch until release() is called. */
  hold(): { release: () => void } {
    let release = (): void => {};
    this.gate = new Promise<void>((r) => {
      release = () => {
        this.gate = undefined;
        r();
      };
    });
    return { release };
  }

  async batch(ops: readonly BatchOp[], options: { sync: boolean }): Promise<void> {
    this.batchCalls++;
    if (this.gate !== undefined) await this.gate;
    if (this.failing) throw new BatchFailed('injected batch failure');
    return this.inner.batch(ops, options);
  }
  get(key: string): Promise<Buffer | undefined> {
    if (this.readFault) return Promise.reject(injectedReadFault());
    return this.inner.get(key);
  }
  async *iterate(range: RangeOptions): AsyncIterable<[string, Buffer]> {
    if (this.readFault) throw injectedReadFault();
    yield* this.inner.iterate(range);
  }
  snapshot(): Promise<Snapshot> {
    return this.inner.snapshot();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

function injectedReadFault(): BackendFault {
  return new BackendFault('storage read failed', 'Corruption: injected block checksum mismatch');
}

/** The composite root computed straight from the stored `v/` values, sharing no code with the index. */
export async function rootFromData(backend: Backend): Promise<Buffer> {
  const blocks = { 1: new Map<number, Buffer>(), 2: new Map<number, Buffer>() };
  for await (const [k, v] of backend.iterate({ gte: 'v/', lt: 'v0' })) {
    const key = k.slice(2);
    const tree = treeOf(classify(key));
    if (tree === undefined) continue;
    const { page, subpage } = locate(key);
    const block = blocks[tree].get(page) ?? Buffer.alloc(256 * 32);
    xorInto(block, leafHash(key, valueHash(v)), subpage * 32);
    blocks[tree].set(page, block);
  }
  const root = (m: Map<number, Buffer>): Buffer =>
    subtreeRoot(Array.from({ length: 256 }, (_, p) => pageHash(m.get(p) ?? Buffer.alloc(256 * 32))));
  return compositeRoot(root(blocks[1]), root(blocks[2]));
}
