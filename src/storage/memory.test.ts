/** MemoryBackend: the shared Backend contract plus its test-only batch counter. */
import { runBackendContract } from '../../test/storage/backend-contract.js';
import { MemoryBackend } from './memory.js';

runBackendContract('memory', async () => {
  const backend = new MemoryBackend();
  return { backend, cleanup: () => backend.close() };
});

describe('MemoryBackend', () => {
  it('counts batches, which tests use to observe group commit', async () => {
    const b = new MemoryBackend();
    await b.batch([{ type: 'put', key: 'a', value: Buffer.from('1') }], { sync: true });
    await b.batch([{ type: 'del', key: 'a' }], { sync: false });
    expect(b.batches).toBe(2);
  });
});
