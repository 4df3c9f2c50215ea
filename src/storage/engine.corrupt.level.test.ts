/**
 * Silent corruption on a real LevelDB: a stored value whose bytes changed under LevelDB's
 * checksums fails decryption. That is a storage fault like a medium's: StorageFailed (503), and
 * the store fails closed (no write acknowledged after it), never a 500.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, Sealed, StorageFailed } from '../core/errors.js';
import { testCipher } from './engine.fixtures.js';
import { StorageEngine } from './engine.js';
import { Keys } from './keyspace.js';
import { openLevelBackend, type LevelBackend } from './leveldb.js';

let dir: string;
let backend: LevelBackend;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-corrupt-'));
  backend = await openLevelBackend({ path: join(dir, 'data') });
});
afterEach(async () => {
  await backend.close().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

describe('a stored value that fails decryption', () => {
  it('is StorageFailed, and fails the store closed: later writes are refused, other reads go on', async () => {
    const engine = await StorageEngine.open(backend, { walMaxEntries: 100, walMaxBytes: 1 << 20 });
    const store = engine.secure(testCipher(Buffer.alloc(32, 5)));
    await store.commit([
      { type: 'put', key: 'logical/m/secret', value: Buffer.from('hunter2') },
      { type: 'put', key: 'logical/m/other', value: Buffer.from('fine') },
    ]);
    // One bit flipped in the ciphertext on disk, behind the engine (as a bad sector read back would be).
    const ct = (await backend.get(Keys.value('logical/m/secret'))) as Buffer;
    const flipped = Buffer.from(ct);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] as number) ^ 1;
    await backend.batch([{ type: 'put', key: Keys.value('logical/m/secret'), value: flipped }], { sync: true });

    const err = await store.get('logical/m/secret').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageFailed);
    expect((err as StorageFailed).code).toBe(ErrorCode.storageFailed);
    expect((err as StorageFailed).message).toMatch(/^storage failed: a stored value failed decryption \(.+\); writes are refused/);
    expect((err as StorageFailed).message).not.toContain('secret');
    expect(engine.failure()).toBe(err);
    await expect(store.commit([{ type: 'put', key: 'logical/m/after', value: Buffer.from('x') }])).rejects.toBe(err);
    expect((await store.get('logical/m/other'))?.toString()).toBe('fine');
    await engine.close();
  });

  it('is not a fault when the node is sealed: the cipher\'s own refusal passes through', async () => {
    const engine = await StorageEngine.open(backend, { walMaxEntries: 100, walMaxBytes: 1 << 20 });
    const cipher = testCipher(Buffer.alloc(32, 5));
    await engine.secure(cipher).commit([{ type: 'put', key: 'k', value: Buffer.from('v') }]);
    const sealed = engine.secure({ encrypt: cipher.encrypt, decrypt: () => { throw new Sealed(); } });
    await expect(sealed.get('k')).rejects.toBeInstanceOf(Sealed);
    expect(engine.failure()).toBeUndefined();
    await engine.close();
  });
});
