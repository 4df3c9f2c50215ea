/**
 * HA under event-loop stalls (issue 26 item 5), on real processes: three nodes on one private
 * PostgreSQL, lease 2 s (test/harness/ha.ts), both cores saturated by two busy processes. The active node's main thread
 * is blocked from inside (a preloaded SIGUSR2 handler that busy-waits, as a long GC pause would):
 * - 1.2 s, three times: no leadership change (same epoch, same active node, no mode change in its
 *   log), and it writes on afterwards. The lease keeper's thread renewed meanwhile.
 * - 4 s: another node takes over while it is stalled, and the old node commits nothing after the
 *   takeover (the WAL's epochs in index order never go back), every acknowledged write present.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jest } from '@jest/globals';
import { eventually, startHaCluster, useHarness, vault, type StartedNode } from '../harness/index.js';
import { expectAllPresent, stopAllWriters, walEpochs, writer } from '../support/ha-load.js';

jest.setTimeout(180_000);

const h = useHarness();
// A case that failed before stopping its writers leaves them to this.
afterEach(stopAllWriters);
const preload = fileURLToPath(new URL('../support/stall-on-signal.mjs', import.meta.url));

const busy: ChildProcess[] = [];
afterAll(() => {
  for (const b of busy) b.kill('SIGKILL');
});

/** Blocks `n`'s main thread for `ms`; resolves once it answers HTTP again. */
async function stall(n: StartedNode, file: string, ms: number): Promise<void> {
  await writeFile(file, String(ms));
  n.proc.kill('SIGUSR2');
  const sent = Date.now();
  await eventually(async () => {
    expect(Date.now() - sent).toBeGreaterThanOrEqual(ms);
    expect((await vault(n.apiAddr).get('sys/health?standbyok=true')).status).toBeLessThan(500);
  }, { timeoutMs: ms + 20_000, intervalMs: 50 });
}

test('a stall shorter than the lease costs no step-down; one past it costs a takeover with no commit by the old node', async () => {
  const stallFile = join(await h.tempDir('stall-'), 'ms');
  const c = await startHaCluster(h, { mountKv2: true, node: { nodeArgs: ['--import', preload], env: { TESSERA_TEST_STALL_FILE: stallFile } } });
  const { nodes, rootToken: root, url } = c;
  const active = await c.active();
  // Both cores busy for the rest of the test.
  for (let i = 0; i < 2; i++) busy.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));

  // Three stalls of 1.2 s: nothing changes.
  const epoch = await c.epoch();
  const modeLines = (): number => active.stdoutLines.filter((l) => l.includes('HA mode changed')).length;
  const modesBefore = modeLines();
  for (let i = 0; i < 3; i++) {
    await stall(active, stallFile, 1_200);
    expect((await vault(active.apiAddr, root).put(`secret/data/after-stall-${i}`, { data: { i } })).status).toBe(200);
  }
  expect(await c.epoch()).toBe(epoch);
  expect(await c.active()).toBe(active);
  expect(modeLines()).toBe(modesBefore);

  // A stall of 4 s: the others take over while it is blocked; it commits nothing afterwards.
  const others = nodes.filter((n) => n !== active);
  const through = writer(others[0]!.apiAddr, root, 'through-standby');
  const old = writer(active.apiAddr, root, 'through-old');
  await eventually(() => expect(Math.min(through.acked.size, old.acked.size)).toBeGreaterThan(10), { timeoutMs: 30_000, intervalMs: 20 });
  const long = stall(active, stallFile, 4_000);
  await c.active({ among: others });
  const atTakeover = await walEpochs(url);
  await long;
  const oldBefore = old.acked.size;
  await eventually(() => expect(old.acked.size).toBeGreaterThan(oldBefore + 10), { timeoutMs: 30_000, intervalMs: 20 });
  await through.stop();
  await old.stop();
  const epochs = await walEpochs(url);
  expect(epochs.length).toBeGreaterThan(atTakeover.length);
  for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBeGreaterThanOrEqual(epochs[i - 1]!);
  expect(new Set(epochs).size).toBeGreaterThanOrEqual(2);
  const leader = await c.active();
  expect(leader).not.toBe(active);
  for (const w of [through, old]) await expectAllPresent(leader.apiAddr, root, w.acked);
});
