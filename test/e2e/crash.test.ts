/**
 * Durability under a crash, on both storage engines: 16 concurrent clients write KV v2 secrets to
 * a real node at full load, the node is SIGKILLed mid-stream, and after a restart on the same
 * storage (its LevelDB, or its PostgreSQL database) every acknowledged write reads back with its
 * value and the Merkle check finds no corruption.
 */
import { randomBytes } from 'node:crypto';
import { eventually, initAndUnseal, mountKv2, unseal, useHarness, vault, type PostgresqlBlock } from '../harness/index.js';
import { ENGINES } from '../support/engines.js';
import { usePostgres } from '../support/postgres.js';

const CLIENTS = 16;
const MIN_ACKED = 300;

const h = useHarness();
const pg = ENGINES.includes('postgresql') ? usePostgres() : undefined;

test.each(ENGINES.map((e) => [e]))('on %s, every write acknowledged at full load survives SIGKILL', async (engine) => {
  const postgresql: PostgresqlBlock | undefined = engine === 'postgresql' ? { connectionUrl: await pg!().createDatabase('crash') } : undefined;
  const node = await h.startNode(postgresql === undefined ? {} : { postgresql });
  const init = await initAndUnseal(node.apiAddr);
  await mountKv2(node.apiAddr, init.rootToken);
  const v = vault(node.apiAddr, init.rootToken);
  await eventually(async () => expect((await v.put('secret/data/warmup', { data: { v: 'x' } })).status).toBe(200), { timeoutMs: 5_000 });

  // A write counts as acknowledged only once its 200 has arrived, which is before the kill.
  const acked = new Map<string, string>();
  const unexpected: string[] = [];
  let stopping = false;
  const client = async (c: number) => {
    for (let n = 0; !stopping; n++) {
      const key = `crash/c${c}/k${n}`;
      const value = `${c}-${n}-${randomBytes(12).toString('base64url')}`;
      try {
        const r = await v.put(`secret/data/${key}`, { data: { v: value, pad: 'x'.repeat(256) } });
        if (r.status === 200) acked.set(key, value);
        else if (!stopping) unexpected.push(`${key}: ${r.status} ${JSON.stringify(r.body)}`);
      } catch {
        // Connection refused or reset: the node is gone.
        return;
      }
    }
  };
  const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));

  await eventually(() => expect(acked.size).toBeGreaterThanOrEqual(MIN_ACKED), { timeoutMs: 30_000, intervalMs: 10 });
  const exit = await node.kill('SIGKILL');
  stopping = true;
  await Promise.all(clients);
  expect(exit.signal).toBe('SIGKILL');
  expect(unexpected).toEqual([]);
  expect(acked.size).toBeGreaterThanOrEqual(MIN_ACKED);

  const again = await h.startNode({ dataDir: node.dataDir, ...(postgresql === undefined ? {} : { postgresql }) });
  expect(await unseal(again.apiAddr, init.keys[0]!)).toMatchObject({ sealed: false });
  const v2 = vault(again.apiAddr, init.rootToken);

  const entries = [...acked];
  const lost: string[] = [];
  const readers = Array.from({ length: CLIENTS }, async () => {
    for (let next = entries.pop(); next !== undefined; next = entries.pop()) {
      const [key, value] = next;
      const r = await v2.get(`secret/data/${key}`);
      if (r.status !== 200 || r.body?.data?.data?.v !== value) lost.push(`${key}: ${r.status} ${JSON.stringify(r.body?.data?.data?.v)}`);
    }
  });
  await Promise.all(readers);
  expect(lost).toEqual([]);

  const check = await v2.post('sys/replication/merkle-check', {});
  expect(check.status).toBe(200);
  const report = check.body.data.merkle_corruption_report;
  expect(report.corrupted_root).toBe(false);
  expect(report.corrupted_tree_map['1'].corrupted_index_tuples_map).toBeNull();
  expect(report.corrupted_tree_map['2'].corrupted_index_tuples_map).toBeNull();
  expect(report.corrupted_tree_map['1'].corrupted_subtree_root).toBe(false);
  expect(report.corrupted_tree_map['2'].corrupted_subtree_root).toBe(false);

  expect(await again.stop()).toEqual({ code: 0, signal: null });
}, 90_000);
