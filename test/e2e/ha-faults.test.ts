/**
 * HA faults on real processes (issue 19 item 7): three nodes on one private PostgreSQL with
 * `ha_enabled` (lease 2 s).
 * - kill -9 of the active node under 16 writers spread over every node: a standby takes over,
 *   and every acknowledged write reads back afterwards.
 * - SIGSTOP of the active node past its lease: a standby takes over; SIGCONT: the old node commits
 *   nothing after the takeover, shown from the database (the epochs of the WAL in index order
 *   never go back), and two writers (one through the old active node, one through a standby)
 *   each find every acknowledged write present, and their counters end at their last acknowledged
 *   value (a late write of the old node would have put an older one back).
 * - Every node killed and started again together: one becomes active, nothing acknowledged is lost.
 * - PostgreSQL stopped under writers and started again: writes answer 503 (never 500), sys/health
 *   says why, and the nodes write again without a restart, every acknowledged write present.
 */
import { jest } from '@jest/globals';
import { eventually, initAndUnseal, mountKv2, unseal, useHarness, vault, type StartedNode } from '../harness/index.js';
import { activeOf, expectAllPresent, walEpochs, writer } from '../support/ha-load.js';
import { usePostgres } from '../support/postgres.js';

jest.setTimeout(180_000);

const h = useHarness();
const postgres = usePostgres();

interface Cluster {
  readonly url: string;
  readonly nodes: StartedNode[];
  readonly keys: readonly string[];
  readonly root: string;
}

async function startHa(db: string, url?: string, homes?: readonly string[]): Promise<StartedNode[]> {
  const connectionUrl = url ?? (await postgres().createDatabase(db));
  const postgresql = { connectionUrl, haEnabled: true, haLeaseTtl: '2s' };
  return Promise.all([0, 1, 2].map((i) => h.startNode({ postgresql, readyTimeoutMs: 60_000, ...(homes?.[i] !== undefined ? { dataDir: homes[i] } : {}) })));
}

async function cluster(db: string): Promise<Cluster> {
  const url = await postgres().createDatabase(db);
  const nodes = await startHa(db, url);
  const init = await initAndUnseal(nodes[0]!.apiAddr, { shares: 1, threshold: 1 });
  for (const n of nodes.slice(1)) await unseal(n.apiAddr, init.keys[0]!);
  await mountKv2((await activeOf(nodes)).apiAddr, init.rootToken);
  return { url, nodes, keys: init.keys, root: init.rootToken };
}

test('kill -9 of the active node under 16 writers: a standby takes over, no acknowledged write is lost', async () => {
  const c = await cluster('ha_kill');
  const first = await activeOf(c.nodes);
  const writers = Array.from({ length: 16 }, (_, i) => writer(c.nodes[i % 3]!.apiAddr, c.root, `w${i}`));
  await eventually(() => expect(writers.reduce((n, w) => n + w.acked.size, 0)).toBeGreaterThan(200), { timeoutMs: 30_000, intervalMs: 20 });
  await first.kill('SIGKILL');
  const rest = c.nodes.filter((n) => n !== first);
  const second = await activeOf(rest, first);
  const before = writers.reduce((n, w) => n + w.acked.size, 0);
  // Writers through the survivors go on: acknowledged again after the takeover.
  await eventually(() => expect(writers.reduce((n, w) => n + w.acked.size, 0)).toBeGreaterThan(before + 100), { timeoutMs: 30_000, intervalMs: 20 });
  for (const w of writers) await w.stop();
  for (const w of writers) await expectAllPresent(second.apiAddr, c.root, w.acked);
});

test('SIGSTOP of the active node past its lease: the old node commits nothing after the takeover', async () => {
  const c = await cluster('ha_pause');
  const old = await activeOf(c.nodes);
  const standby = c.nodes.find((n) => n !== old) as StartedNode;
  const a = writer(old.apiAddr, c.root, 'through-old');
  const b = writer(standby.apiAddr, c.root, 'through-standby');
  await eventually(() => expect(Math.min(a.acked.size, b.acked.size)).toBeGreaterThan(20), { timeoutMs: 30_000, intervalMs: 20 });

  old.proc.kill('SIGSTOP');
  const next = await activeOf(c.nodes.filter((n) => n !== old), old);
  const epochsAtTakeover = await walEpochs(c.url);
  const bBefore = b.acked.size;
  await eventually(() => expect(b.acked.size).toBeGreaterThan(bBefore + 20), { timeoutMs: 30_000, intervalMs: 20 });
  old.proc.kill('SIGCONT');
  // The old node notices, steps down and competes again; its writer's requests now go through it as a standby.
  const aBefore = a.acked.size;
  await eventually(() => expect(a.acked.size).toBeGreaterThan(aBefore + 20), { timeoutMs: 30_000, intervalMs: 20 });
  await a.stop();
  await b.stop();

  const epochs = await walEpochs(c.url);
  expect(epochs.length).toBeGreaterThan(epochsAtTakeover.length);
  // In WAL order the epoch never goes back: no entry of the old term after the new term's first.
  for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBeGreaterThanOrEqual(epochs[i - 1]!);
  expect(new Set(epochs).size).toBeGreaterThanOrEqual(2);

  const leader = await activeOf(c.nodes);
  for (const w of [a, b]) await expectAllPresent(leader.apiAddr, c.root, w.acked);
  const v = vault(leader.apiAddr, c.root);
  expect((await v.get('secret/data/through-old/counter')).body.data.data.n).toBe(a.last());
  expect((await v.get('secret/data/through-standby/counter')).body.data.data.n).toBe(b.last());
  void next;
});

test('every node killed and started again together: one becomes active and nothing acknowledged is lost', async () => {
  const c = await cluster('ha_all');
  await activeOf(c.nodes);
  const w = writer(c.nodes[1]!.apiAddr, c.root, 'all');
  await eventually(() => expect(w.acked.size).toBeGreaterThan(50), { timeoutMs: 30_000, intervalMs: 20 });
  await Promise.all(c.nodes.map((n) => n.kill('SIGKILL')));
  await w.stop();
  const again = await startHa('ha_all', c.url, c.nodes.map((n) => n.dataDir));
  for (const n of again) await unseal(n.apiAddr, c.keys[0]!);
  const leader = await activeOf(again);
  await expectAllPresent(leader.apiAddr, c.root, w.acked);
  expect((await vault(again[2]!.apiAddr, c.root).put('secret/data/after', { data: { v: 'ok' } })).status).toBe(200);
});

test('PostgreSQL stopped under writers and started again: 503s that say why, then writes resume without a restart', async () => {
  const c = await cluster('ha_pg_restart');
  await activeOf(c.nodes);
  const writers = c.nodes.map((n, i) => writer(n.apiAddr, c.root, `pg${i}`));
  await eventually(() => expect(writers.reduce((n, w) => n + w.acked.size, 0)).toBeGreaterThan(60), { timeoutMs: 30_000, intervalMs: 20 });
  await postgres().stopServer();
  // While it is down every node says why in sys/health, and a write is refused with a 503.
  await eventually(async () => {
    const health = await vault(c.nodes[0]!.apiAddr).get('sys/health');
    expect(health.status).toBe(503);
    expect(String(health.body.storage_error)).toMatch(/HA lock in storage cannot be reached|storage failed/);
  }, { timeoutMs: 20_000, intervalMs: 100 });
  const during = await vault(c.nodes[1]!.apiAddr, c.root).put('secret/data/during-outage', { data: { v: 'x' } });
  expect(during.status).toBe(503);
  await postgres().startServer();
  const before = writers.reduce((n, w) => n + w.acked.size, 0);
  await eventually(() => expect(writers.reduce((n, w) => n + w.acked.size, 0)).toBeGreaterThan(before + 60), { timeoutMs: 30_000, intervalMs: 20 });
  for (const w of writers) await w.stop();
  for (const w of writers) expect([...w.statuses].filter((s) => s !== 200 && s !== 503)).toEqual([]);
  const leader = await activeOf(c.nodes);
  for (const w of writers) await expectAllPresent(leader.apiAddr, c.root, w.acked);
});
