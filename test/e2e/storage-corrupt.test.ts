/**
 * Storage health on real node processes (issue 6 items 9 and 12): the storage directory is 0700
 * with 0600 files; a corrupted LevelDB table block is reported in sys/health and replication
 * status, writes answer 503 naming the corruption and what to do, and what is readable is served.
 */
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { openLevelBackend } from '../../src/storage/leveldb.js';
import { initAndUnseal, mountKv2, unseal, useHarness, vault } from '../harness/index.js';

const h = useHarness();

async function modes(dir: string): Promise<{ dir: number; files: Array<[string, number]> }> {
  const files: Array<[string, number]> = [];
  for (const f of await readdir(dir)) files.push([f, (await stat(join(dir, f))).mode & 0o777]);
  return { dir: (await stat(dir)).mode & 0o777, files };
}

test('the storage directory is 0700 and every file in it 0600, before and after a restart', async () => {
  const node = await h.startNode();
  const init = await initAndUnseal(node.apiAddr);
  await mountKv2(node.apiAddr, init.rootToken);
  expect((await vault(node.apiAddr, init.rootToken).put('secret/data/a', { data: { a: 1 } })).status).toBe(200);
  const live = await modes(node.storageDir);
  expect(live.dir).toBe(0o700);
  expect(live.files.length).toBeGreaterThan(3);
  expect(live.files.filter(([, m]) => m !== 0o600)).toEqual([]);
  await node.stop();
  // The restart converts the log into a table and starts a new log: new files, same modes.
  const again = await h.startNode({ dataDir: node.dataDir });
  await unseal(again.apiAddr, init.keys[0]!);
  const after = await modes(again.storageDir);
  expect(after.files.some(([f]) => f.endsWith('.ldb'))).toBe(true);
  expect(after.dir).toBe(0o700);
  expect(after.files.filter(([, m]) => m !== 0o600)).toEqual([]);
  await again.stop();
}, 60_000);

test('a corrupted table block: health and status report it, writes answer 503 saying what to do, reads go on', async () => {
  const node = await h.startNode();
  const init = await initAndUnseal(node.apiAddr);
  await mountKv2(node.apiAddr, init.rootToken);
  const v = vault(node.apiAddr, init.rootToken);
  for (let i = 0; i < 300; i++) expect((await v.put(`secret/data/k-${i}`, { data: { i } })).status).toBe(200);
  await node.stop();

  // Opening replays the log into a table (.ldb). Then a stretch in the middle of the Merkle leaf
  // blocks of tree 1 is overwritten: those blocks no longer decode.
  const backend = await openLevelBackend({ path: node.storageDir });
  const from = await backend.approximateSize('', 'm/1/l/');
  const to = await backend.approximateSize('', 'm/1/l0');
  await backend.close();
  const tables = (await readdir(node.storageDir)).filter((f) => f.endsWith('.ldb'));
  expect(tables).toHaveLength(1);
  expect(to - from).toBeGreaterThan(8192);
  const fh = await open(join(node.storageDir, tables[0]!), 'r+');
  await fh.write(Buffer.alloc(to - from - 2048, 0xa5), 0, to - from - 2048, from + 1024);
  await fh.close();

  const again = await h.startNode({ dataDir: node.dataDir });
  await unseal(again.apiAddr, init.keys[0]!);
  const v2 = vault(again.apiAddr, init.rootToken);
  const healthBefore = await vault(again.apiAddr).get('sys/health');
  expect(healthBefore.status).toBe(200);

  // Writes touch the damaged leaves: the first that does fails the store; from then on all answer 503.
  const statuses: number[] = [];
  let message = '';
  for (let i = 0; i < 300; i++) {
    const r = await v2.put(`secret/data/k-${i}`, { data: { i, again: true } });
    statuses.push(r.status);
    if (r.status !== 200) message ||= (r.body.errors ?? []).join(' ');
  }
  expect(statuses).not.toContain(500);
  const firstFailure = statuses.indexOf(503);
  expect(firstFailure).toBeGreaterThanOrEqual(0);
  expect(statuses.slice(firstFailure).every((s) => s === 503)).toBe(true);
  expect(message).toMatch(/^storage failed: Corruption: .*; .*restart.*restore/);

  const check = await v2.post('sys/replication/merkle-check', {});
  expect(check.status).toBe(503);
  const health = await vault(again.apiAddr).get('sys/health');
  expect(health.status).toBe(503);
  expect(health.body.storage_failed).toBe(true);
  expect(health.body.storage_error).toMatch(/Corruption/);
  const status = await v2.get('sys/replication/dr/status');
  expect(status.body.data.storage_failed).toBe(true);
  // Values live outside the damaged blocks: every one is still served.
  for (let i = 0; i < 300; i += 37) {
    const r = await v2.get(`secret/data/k-${i}`);
    expect([i, r.status]).toEqual([i, 200]);
    expect(r.body.data.data.i).toBe(i);
  }
  await again.stop();
}, 120_000);
