/**
 * HA under mistakes on real processes (issue 26 items 1, 2, 6): one cluster of three nodes on one
 * private PostgreSQL (lease 2 s, test/harness/ha.ts), shared by the cases in order.
 * - A node whose cluster port is taken wins the lease (it is the only unsealed node): it releases
 *   the row and backs off, saying why in its log and in sys/ha-status; a node unsealed then is
 *   active within one lease period and a retry (before: it re-took its own row forever).
 * - A second process with a live node's api_addr and cluster_addr refuses to start, naming the
 *   other node; the live cluster keeps its active node and epoch.
 * - A step-down storm: after each sys/step-down, another node is active within 1 s.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { eventually, mainJs, startHaCluster, unseal, useHarness, vault, type HaCluster, type HaNode } from '../harness/index.js';

jest.setTimeout(240_000);

const h = useHarness();

async function isSelf(n: HaNode): Promise<boolean> {
  const r = await vault(n.apiAddr).get('sys/leader').catch(() => undefined);
  return r?.body?.is_self === true;
}

let c: HaCluster<HaNode>;
let nodes: HaNode[] = [];
let keys: readonly string[] = [];
let root = '';

/** The one node that says it is active (sealed nodes, or one backing off, need not name it). */
const activeOf = (among: readonly HaNode[]): Promise<HaNode> => c.active({ among, agreed: false, timeoutMs: 20_000 });

beforeAll(async () => {
  // Only the initialised node is unsealed; the third node's addresses are fixed (every node's
  // are): its cluster port is taken in the first case, and its addresses are duplicated in the second.
  c = await startHaCluster(h, { unseal: 'first', mountKv2: true, database: 'ha_mistakes' });
  ({ nodes, unsealKeys: keys, rootToken: root } = c);
}, 120_000);

test('a node whose cluster port is taken releases the lease and backs off, saying why; another node is active within a lease', async () => {
  const [a, b, s] = nodes as [HaNode, HaNode, HaNode];
  // s is sealed, so its cluster port is free: take it.
  // It accepts and never answers; nodes that dial the lock row's cluster address (relays, the
  // leader check) connect to it. close() waits for every connection to end: they are destroyed.
  const held = new Set<Socket>();
  const squatter: Server = createServer((c) => {
    held.add(c);
    c.on('close', () => held.delete(c));
  });
  await new Promise<void>((resolve, reject) => squatter.once('error', reject).listen(Number(s.clusterAddr.split(':')[1]), '127.0.0.1', resolve));
  try {
    // a alone is unsealed (it was initialised there), so it is active; seal it: no node competes.
    await activeOf([a, b, s]);
    expect((await vault(a.apiAddr, root).put('sys/seal', {})).status).toBe(204);
    // s alone unsealed: it wins the lease and fails to start its active role.
    await unseal(s.apiAddr, keys[0]!);
    const lines = (): string[] => s.stderrLines.concat(s.stdoutLines);
    await eventually(() => expect(lines().some((l) => l.includes('HA: becoming active failed'))).toBe(true), { timeoutMs: 20_000, intervalMs: 50 });
    // b unsealed now: active within one lease period and a retry (s released the row; before
    // the fix s re-took its own row at once, for ever).
    await unseal(b.apiAddr, keys[0]!);
    const from = Date.now();
    await eventually(async () => expect(await isSelf(b)).toBe(true), { timeoutMs: 15_000, intervalMs: 25 });
    expect(Date.now() - from).toBeLessThan(2000 + 250 + 750);
    // s says why in its log, once per failure, and backs off (it failed at least once more
    // before b came, each time after a longer wait).
    const failures = lines().filter((l) => l.includes('failed to serve as the active node; it released the lock and backs off'));
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures[0]).toMatch(/EADDRINUSE/);
    // sys/ha-status (through any node) shows why s does not compete, and until when (from its next echo).
    await eventually(
      async () => {
        const r = await vault(s.apiAddr, root).get('sys/ha-status');
        expect(r.status).toBe(200);
        const self = (r.body.nodes as { api_address: string; activation_failure?: { reason: string; competes_again_at: string } }[]).find((n) => n.api_address === s.apiAddr);
        expect(self?.activation_failure?.reason).toMatch(/EADDRINUSE/);
        expect(Date.parse(self!.activation_failure!.competes_again_at)).toBeGreaterThan(Date.now());
      },
      { timeoutMs: 5000, intervalMs: 100 },
    );
    expect(await isSelf(s)).toBe(false);
    expect((await vault(s.apiAddr, root).put('secret/data/after-port', { data: { v: 'ok' } })).status).toBe(200);
  } finally {
    const closed = new Promise((resolve) => squatter.close(resolve));
    for (const c of held) c.destroy();
    await closed;
    await unseal(a.apiAddr, keys[0]!);
  }
});

test('a second process with a live node\'s addresses refuses to start, naming it; the cluster keeps its active node and epoch', async () => {
  const [, , s] = nodes as [HaNode, HaNode, HaNode];
  const active = await activeOf(nodes);
  const epoch = await c.epoch();
  // The same config file as s (its api_addr, cluster_addr and database), in a process of its own.
  const home = await mkdtemp(join(tmpdir(), 'tessera-dup-'));
  const config = join(home, 'config.hcl');
  await writeFile(config, await readFile(join(s.dataDir, 'config.hcl'), 'utf8'));
  const dup = spawn(process.execPath, [mainJs, 'server', '-config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  dup.stdout.on('data', (d: Buffer) => (output += d.toString()));
  dup.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => dup.on('exit', (c) => resolve(c)));
  await rm(home, { recursive: true, force: true });
  expect(code).not.toBe(0);
  expect(output).toMatch(/another live node of this HA cluster has this node's identity/);
  expect(output).toContain(`api_addr ${s.apiAddr}`);
  expect(output).toContain(`cluster_addr ${s.clusterAddr}`);
  expect(output).toMatch(/last echo \d{4}-/);
  expect(await activeOf(nodes)).toBe(active);
  expect(await c.epoch()).toBe(epoch);
});

test('a step-down storm: after each step-down another node is active soon (median under 1 s, none past 4 s)', async () => {
  // Every node unsealed and none backing off (the first case's node competes again).
  for (const n of nodes) if ((await vault(n.apiAddr).get('sys/seal-status')).body.sealed === true) await unseal(n.apiAddr, keys[0]!);
  await eventually(
    async () => {
      const r = await vault(nodes[0]!.apiAddr, root).get('sys/ha-status');
      expect(JSON.stringify(r.body.nodes)).not.toContain('activation_failure');
    },
    { timeoutMs: 40_000, intervalMs: 200 },
  );
  const gaps: number[] = [];
  for (let i = 0; i < 10; i++) {
    const active = await activeOf(nodes);
    const rest = nodes.filter((n) => n !== active);
    expect((await vault(active.apiAddr, root).put('sys/step-down', {})).status).toBe(204);
    const from = Date.now();
    await eventually(async () => expect((await Promise.all(rest.map(isSelf))).some((x) => x)).toBe(true), { timeoutMs: 15_000, intervalMs: 10 });
    gaps.push(Date.now() - from);
  }
  // Bounds, not timings: the absolute cooldown this replaced left the cluster without an active
  // node for up to 8 s; a loaded CI machine stretches a polite hand-over to ~1.7 s now and then.
  const median = [...gaps].sort((a, b) => a - b)[Math.floor(gaps.length / 2)]!;
  expect({ gaps, median: median < 1000, slow: gaps.filter((g) => g >= 4000) }).toEqual({ gaps, median: true, slow: [] });
  const leader = await activeOf(nodes);
  expect((await vault(leader.apiAddr, root).put('secret/data/after-storm', { data: { v: 'ok' } })).status).toBe(200);
});
