/**
 * The nemesis on the HA topology (scripts/nemesis.mjs --topology ha) as CI runs it: a primary
 * cluster of three HA nodes on one private PostgreSQL, a DR secondary cluster of two on another,
 * a performance secondary, real processes under the recorded workload (writes and reads through
 * every primary-cluster node, standbys relaying, and through the performance secondary). Seed 187's
 * six cycles run each HA fault once: the primary cluster's PostgreSQL stopped and started again,
 * a SIGKILL of the DR secondary cluster's active node (restart, unseal), the primary cluster's
 * active node's event loop blocked for 1.4 s (under its lease), a SIGSTOP of the DR secondary
 * cluster's active node past its lease, a second process started with the DR secondary cluster's
 * active node's config (it must refuse to start), and a step-down of the primary cluster's active
 * node. The checker's verdict must be zero violations (health that disagrees with the cluster
 * after a fault, or a duplicate that started, count as violations), every fault that takes the
 * active node away must end with another node active, and the stall and the duplicate with the
 * same one.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { faultSchedule, HA_FAULTS, PAUSE_PAST_LEASE_MS, STALL_UNDER_LEASE_MS } from '../harness/nemesis-check.js';

const run = promisify(execFile);
const SEED = 187;
const CYCLES = 6;
const CYCLE_MS = 2_000;

test('the HA fault schedule: clusters as targets, a step-down only on the primary cluster, every pause past the 2 s lease, every stall under it', () => {
  const long = faultSchedule(SEED, 200, CYCLE_MS, HA_FAULTS);
  expect(new Set(long.map((f) => `${f.type} ${f.target}`))).toEqual(
    new Set(['active-kill primary', 'active-kill dr', 'active-pause primary', 'active-pause dr', 'active-stall primary', 'active-stall dr', 'duplicate-start primary', 'duplicate-start dr', 'step-down primary', 'pg-restart primary', 'pg-restart dr']),
  );
  for (const f of long.filter((x) => x.type === 'active-pause')) expect(f.holdMs >= PAUSE_PAST_LEASE_MS[0] && f.holdMs <= PAUSE_PAST_LEASE_MS[1]).toBe(true);
  for (const f of long.filter((x) => x.type === 'active-stall')) expect(f.holdMs >= STALL_UNDER_LEASE_MS[0] && f.holdMs <= STALL_UNDER_LEASE_MS[1]).toBe(true);
  expect(faultSchedule(SEED, CYCLES, CYCLE_MS, HA_FAULTS).map((f) => f.type).sort()).toEqual([...HA_FAULTS].sort());
});

test(`nemesis --topology ha, seed ${SEED}, ${CYCLES} cycles: every HA fault once, zero violations, every acknowledged write on the primary cluster`, async () => {
  const out = await mkdtemp(join(tmpdir(), 'nemesis-ha-ci-'));
  try {
    const args = ['scripts/nemesis.mjs', '--topology', 'ha', '--cycles', String(CYCLES), '--seed', String(SEED), '--cycle-ms', String(CYCLE_MS), '--converge-ms', '45000', '--out', out];
    const child = await run(process.execPath, args, { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 230_000 }).catch((e: { code?: number; stdout?: string; stderr?: string }) => e);
    const summary = JSON.parse(await readFile(join(out, `nemesis-${SEED}.summary.json`), 'utf8').catch(() => 'null')) as Record<string, any> | null;
    if (summary === null) throw new Error(`nemesis wrote no summary: ${JSON.stringify(child).slice(0, 2000)}`);
    expect(summary.violations).toEqual([]);
    expect('code' in child ? child.code : 0).toBe(0);
    expect(summary.topology).toBe('ha');
    expect(summary.schedule).toEqual(faultSchedule(SEED, CYCLES, CYCLE_MS, HA_FAULTS));
    // Every HA fault kind ran, once each.
    expect(summary.faults).toEqual(Object.fromEntries(HA_FAULTS.map((f) => [f, 1])));
    expect(summary.takeovers.map((t: { type: string }) => t.type)).toEqual(summary.schedule.map((f: { type: string }) => f.type));
    // A step-down, a kill and a pause past the lease each end with another node of the cluster
    // active; a stall under the lease and a refused duplicate with the same node.
    const kept = ['active-stall', 'duplicate-start'];
    for (const t of summary.takeovers.filter((x: { type: string }) => !['pg-restart', ...kept].includes(x.type))) expect(t.after).not.toBe(t.before);
    for (const t of summary.takeovers.filter((x: { type: string }) => kept.includes(x.type))) expect(t.after).toBe(t.before);
    // Every restarted node started at its first try (the start-up race this run once found, the
    // WAL trimmed between the meta read and the scan, reads the tail again: catch-up.test.ts).
    expect(summary.start_failures).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.acknowledged).toBeGreaterThan(50);
    expect(summary.forwarded_writes_ok).toBeGreaterThan(0);
    expect(Object.keys(summary.merkle_check_clean)).toHaveLength(3);
    expect(Object.values(summary.merkle_check_clean).every((clean) => clean === true)).toBe(true);
    expect(Object.keys(summary.convergence_ms).sort()).toEqual([summary.final_roles.dr, 'c'].sort());
    // Writes were acknowledged through every node of the primary cluster: standbys relayed them.
    const history = (await readFile(join(out, `nemesis-${SEED}.jsonl`), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { kind: string; node: string; outcome: string });
    expect(history).toHaveLength(summary.operations);
    expect(new Set(history.filter((o) => o.kind === 'write' && o.outcome === 'ok').map((o) => o.node))).toEqual(new Set(['a1', 'a2', 'a3', 'c']));
    // Reads were answered through every node too, and those on a1-a3 were judged current against
    // every write acknowledged before they began (the checker's stale-read rule; issue 28 item 3).
    expect(new Set(history.filter((o) => o.kind === 'read' && o.outcome === 'ok').map((o) => o.node))).toEqual(new Set(['a1', 'a2', 'a3', 'c']));
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}, 240_000);
