/**
 * A stored value whose bytes changed on disk (silent corruption LevelDB's checksums missed) fails
 * decryption: the node answers 503 storage_failed and fails closed, as for a medium fault, never
 * a 500; sys/health says so, and what still decrypts is served. Runs on LevelDB and on PostgreSQL
 * (forEachEngine, test/support/engines.ts): on PostgreSQL the bytes change in the node's table.
 */
import { useHarness } from '../harness/index.js';
import { forEachEngine, openStoredBackend } from '../support/engines.js';

forEachEngine(() => {
  const h = useHarness();

  test('a value that fails decryption is 503 storage_failed, the node fails closed, other reads go on', async () => {
    const dir = await h.tempDir('decrypt-');
    const node = await h.startNode({ inProcess: true, dir });
    await node.vault().post('sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    expect((await node.vault().put('secret/data/app', { data: { password: 'hunter2' } })).status).toBe(200);
    expect((await node.vault().put('secret/data/other', { data: { v: 'fine' } })).status).toBe(200);
    const { rootToken, unsealKeys } = node;
    await node.stop({ keepDir: true });

    // Flip one bit of secret/data/app's stored metadata and version (KV v2 keeps both).
    const backend = await openStoredBackend(dir);
    let flipped = 0;
    const writes: { type: 'put'; key: string; value: Buffer }[] = [];
    for await (const [key, value] of backend.iterate({ gte: 'v/', lt: 'v0' })) {
      if (!/^v\/logical\/[^/]+\/(meta\/app|versions\/app\/\d+)$/.test(key)) continue;
      const bad = Buffer.from(value);
      bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1;
      writes.push({ type: 'put', key, value: bad });
      flipped++;
    }
    await backend.batch(writes, { sync: true });
    await backend.close();
    expect(flipped).toBe(2); // its metadata and its one version

    const again = await h.startNode({ inProcess: true, dir, initialize: false });
    again.rootToken = rootToken;
    for (const key of unsealKeys.slice(0, 2)) await again.vault(null).put('sys/unseal', { key });
    const read = await again.vault().get('secret/data/app');
    expect(read.status).toBe(503);
    expect(read.body.errors[0]).toMatch(/^storage failed: a stored value failed decryption \(.+\); writes are refused/);
    expect(read.text).not.toContain('hunter2');
    const health = await again.vault(null).get('sys/health');
    expect({ status: health.status, failed: health.body.storage_failed }).toEqual({ status: 503, failed: true });
    expect((await again.vault().put('secret/data/new', { data: { v: 1 } })).status).toBe(503);
    const other = await again.vault().get('secret/data/other');
    expect({ status: other.status, v: other.body?.data?.data?.v }).toEqual({ status: 200, v: 'fine' });
    await again.stop();
  });
});
