/**
 * The nemesis (scripts/nemesis.mjs) as CI runs it: a fixed seed, five short cycles of random
 * faults over a real topology (primary, DR secondary, two filtered performance secondaries, every
 * cluster link through a TCP proxy) under a recorded workload, and zero violations from the
 * checker. Seed 2 is the one that found the reconcile livelock (a secondary whose reconcile took
 * longer than the primary's WAL retention reconciled forever): its schedule is a failover, a filter
 * change while a performance secondary is down, a partition, the failback, and a DR secondary held
 * past the WAL bound.
 *
 * The checker itself is proved on hand-made histories: it must catch a lost acknowledged write
 * (also one overwritten since), a read going backwards and a filter leak, and tell failover loss
 * from loss, or a clean run would prove nothing.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { checkAcknowledged, checkCurrentReads, checkFilterLeaks, checkHistory, checkMonotonicReads, checkMountsServed, faultSchedule, recheck, type Op } from '../harness/nemesis-check.js';

const run = promisify(execFile);
const SEED = 2;
const CYCLES = 5;
const CYCLE_MS = 2_000;

const op = (o: Partial<Op> & Pick<Op, 'id' | 'kind' | 'node' | 'start' | 'end' | 'outcome'>): Op => ({ client: 'x', mount: 'secret', key: 'k', ...o });
const w = (id: number, value: string, outcome: Op['outcome'], version?: number, node = 'a'): Op =>
  op({ id, kind: 'write', node, start: id * 10, end: id * 10 + 5, outcome, value, ...(version ? { version } : {}) });
const r = (id: number, version: number, start: number, value?: string): Op => op({ id, kind: 'read', node: 'c', start, end: start + 1, outcome: 'ok', version, ...(value ? { value } : {}) });

describe('nemesis checker', () => {
  test('an acknowledged write missing from the final primary is lost; an unknown write may win', () => {
    const history = [w(1, 'v1', 'ok', 1), w(2, 'v2', 'ok', 2), w(3, 'v3', 'unknown')];
    expect(checkAcknowledged(history, { 'secret/k': { value: 'v2', version: 2 } }).lost).toEqual([]);
    expect(checkAcknowledged(history, { 'secret/k': { value: 'v3', version: 3 } }).lost).toEqual([]);
    const lost = checkAcknowledged(history, { 'secret/k': { value: 'v1', version: 1 } });
    expect(lost.lostWrites).toBe(1);
    expect(lost.lost[0]).toMatchObject({ key: 'secret/k', id: 2, value: 'v2', reason: 'not on the final primary' });
    expect(checkAcknowledged(history, {}).lostWrites).toBe(2);
  });

  test('a write overwritten since is still caught as lost when a later write got a version not above it', () => {
    const history = [w(1, 'v1', 'ok', 1), w(2, 'v2', 'ok', 2), w(3, 'v3', 'ok', 2)];
    const verdict = checkAcknowledged(history, { 'secret/k': { value: 'v3', version: 2 } });
    expect(verdict.lost).toEqual([expect.objectContaining({ id: 2, reason: 'a later write got a version not above it' })]);
    // Overlapping writes prove nothing about each other's versions.
    const overlapping = [{ ...w(1, 'v1', 'ok', 2), end: 25 }, { ...w(2, 'v2', 'ok', 1), start: 12 }];
    expect(checkAcknowledged(overlapping, { 'secret/k': { value: 'v2', version: 1 } }).lost).toEqual([]);
  });

  test('a write the old primary acknowledged in the failover window is failover loss, counted per failover, not a violation', () => {
    const history = [w(1, 'v1', 'ok', 1), w(2, 'v2', 'ok', 2, 'old'), w(3, 'v3', 'ok', 2, 'b')];
    const windows = [{ from: 15, until: { old: Infinity } }];
    expect(checkAcknowledged(history, { 'secret/k': { value: 'v3', version: 2 } }, { lossWindows: windows })).toMatchObject({ lostWrites: 0, failoverLoss: [2], lossPerWindow: [1] });
    // Before the window, the same loss is a violation.
    expect(checkAcknowledged(history, { 'secret/k': { value: 'v3', version: 2 } }, { lossWindows: [{ from: 30, until: { old: Infinity } }] }).lostWrites).toBe(1);
  });

  test('reads on one node going backwards are violations unless a failover took the newer value back', () => {
    expect(checkMonotonicReads([r(1, 1, 0), r(2, 3, 10), r(3, 3, 20)]).violations).toEqual([]);
    expect(checkMonotonicReads([r(1, 1, 0), r(2, 3, 10), r(3, 2, 20)]).violations).toEqual([{ node: 'c', key: 'secret/k', earlier: { id: 2, version: 3 }, later: { id: 3, version: 2 } }]);
    // Overlapping reads may see either order.
    expect(checkMonotonicReads([op({ id: 1, kind: 'read', node: 'c', start: 0, end: 50, outcome: 'ok', version: 3 }), r(2, 2, 10)]).violations).toEqual([]);
    expect(checkMonotonicReads([r(1, 3, 0, 'lost'), r(2, 2, 10)], { exemptValues: new Set(['lost']) })).toEqual({ violations: [], exempted: 1 });
  });

  test('a read on a node of one shared-storage cluster older than a write acknowledged before it began is stale (performance standbys, issue 28)', () => {
    const w = (id: number, version: number, end: number, value = `v${version}`) => op({ id, kind: 'write', node: 'a1', start: end - 5, end, outcome: 'ok', status: 200, version, value });
    const rd = (id: number, node: string, version: number | undefined, start: number) => op({ id, kind: 'read', node, start, end: start + 5, outcome: 'ok', status: 200, ...(version !== undefined ? { version } : {}) });
    const writes = [w(1, 1, 10), w(2, 2, 20)];
    // Current, overlapping (may see either) and not of the cluster: no violation.
    expect(checkCurrentReads([...writes, rd(3, 'a2', 2, 25), rd(4, 'a3', 1, 15), rd(5, 'a3', 1, 18), rd(6, 'c', 1, 30)], ['a1', 'a2', 'a3'])).toEqual([]);
    expect(checkCurrentReads([...writes, rd(7, 'a2', 1, 25)], ['a1', 'a2', 'a3'])).toEqual([{ node: 'a2', key: 'secret/k', read: { id: 7, version: 1, start: 25 }, acknowledged: { id: 2, version: 2, end: 20 } }]);
    // A key not there yet (version 0) after an acknowledged write is stale too; a mount-missing read (no version) is judged elsewhere.
    expect(checkCurrentReads([...writes, rd(8, 'a2', 0, 25), rd(9, 'a2', undefined, 25)], ['a2']).map((v) => v.read.id)).toEqual([8]);
    // A failover-window write may be taken back.
    expect(checkCurrentReads([...writes, rd(10, 'a2', 1, 25)], ['a2'], { exemptValues: new Set(['v2']) })).toEqual([]);
    expect(checkHistory([...writes, rd(7, 'a2', 1, 25)], { 'secret/k': { value: 'v2', version: 2 } }, { currentReaders: ['a2'] }).violations.map((v) => v['type'])).toEqual(['stale-read']);
  });

  test('a performance secondary serving a mount outside every filter in force during the read is a leak', () => {
    const leak = op({ id: 9, kind: 'read', node: 'c', mount: 'other', start: 100, end: 101, outcome: 'ok', status: 200, version: 1 });
    const timeline = { c: [{ mounts: ['secret'], from: 0, to: 50 }, { mounts: ['secret', 'other'], from: 40, to: 200 }, { mounts: ['secret'], from: 150 }] };
    expect(checkFilterLeaks([leak, { ...leak, id: 10, start: 300, end: 301 }, { ...leak, id: 11, status: 404, start: 300, end: 301 }], timeline)).toEqual([{ node: 'c', key: 'other/k', id: 10 }]);
    expect(checkHistory([{ ...leak, start: 300, end: 301 }], {}, { filterTimeline: timeline }).violations).toEqual([{ type: 'filter-leak', node: 'c', key: 'other/k', id: 9 }]);
  });

  test('a node answering "no such mount" for a mount it must serve is a violation (a read during unseal, issue 17 item 5)', () => {
    const missing = (id: number, node: string, mount: string, start: number) => op({ id, kind: 'read', node, mount, start, end: start + 1, outcome: 'ok', status: 404, mountMissing: true });
    const timeline = { c: [{ mounts: ['secret'], from: 0, to: 50 }, { mounts: ['secret', 'other'], from: 40 }] };
    // The primary serves every mount; c serves secret always, other only once no older filter is in force.
    expect(checkMountsServed([missing(1, 'a', 'other', 10)], timeline)).toEqual([{ node: 'a', key: 'other/k', id: 1, start: 10 }]);
    expect(checkMountsServed([missing(2, 'c', 'secret', 10), missing(3, 'c', 'other', 45), missing(4, 'c', 'other', 100)], timeline).map((v) => v.id)).toEqual([2, 4]);
    expect(checkHistory([missing(5, 'a', 'secret', 10)], {}, { filterTimeline: timeline }).violations).toEqual([{ type: 'mount-not-served', node: 'a', key: 'secret/k', id: 5, start: 10 }]);
  });

  test('the fault schedule is a function of the seed and the fault list', () => {
    expect(faultSchedule(SEED, 20, CYCLE_MS)).toEqual(faultSchedule(SEED, 20, CYCLE_MS));
    expect(faultSchedule(SEED, 20, CYCLE_MS)).not.toEqual(faultSchedule(SEED + 1, 20, CYCLE_MS));
    expect(new Set(faultSchedule(SEED, 50, CYCLE_MS, ['pause', 'kill']).map((f) => f.type))).toEqual(new Set(['pause', 'kill']));
    expect(faultSchedule(SEED, CYCLES, CYCLE_MS).map((f) => f.type)).toEqual(['failover', 'filter', 'partition', 'failover', 'wal-behind']);
    // The CI run's second failover is a planned switchover under writes (demote first, no loss allowed).
    expect(faultSchedule(SEED, CYCLES, CYCLE_MS).filter((f) => f.type === 'failover').map((f) => f.variant)).toEqual(['partition', 'planned']);
    expect(new Set(faultSchedule(SEED, 60, CYCLE_MS, ['failover']).map((f) => f.variant))).toEqual(new Set(['kill', 'partition', 'planned']));
    // Filter changes are written both ways over a long schedule.
    expect(new Set(faultSchedule(SEED, 200, CYCLE_MS, ['filter']).map((f) => f.variant))).toEqual(new Set(['allow', 'deny']));
  });
});

test(`nemesis seed ${SEED}, ${CYCLES} cycles: zero violations, every acknowledged write on the primary, every secondary converged`, async () => {
  const out = await mkdtemp(join(tmpdir(), 'nemesis-ci-'));
  try {
    const args = ['scripts/nemesis.mjs', '--cycles', String(CYCLES), '--seed', String(SEED), '--cycle-ms', String(CYCLE_MS), '--converge-ms', '45000', '--out', out];
    const child = await run(process.execPath, args, { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 170_000 }).catch((e: { code?: number; stdout?: string; stderr?: string }) => e);
    const summary = JSON.parse(await readFile(join(out, `nemesis-${SEED}.summary.json`), 'utf8').catch(() => 'null')) as Record<string, any> | null;
    if (summary === null) throw new Error(`nemesis wrote no summary: ${JSON.stringify(child).slice(0, 2000)}`);
    expect(summary.violations).toEqual([]);
    expect('code' in child ? child.code : 0).toBe(0);
    expect(summary.schedule).toEqual(faultSchedule(SEED, CYCLES, CYCLE_MS));
    expect(summary.acknowledged).toBeGreaterThan(50);
    expect(summary.forwarded_writes_ok).toBeGreaterThan(0);
    expect(summary.lost).toBe(0);
    // Failover and failback: the roles are back where they started, each failover reported.
    expect(summary.failovers.map((f: { from: string; to: string }) => `${f.from}->${f.to}`)).toEqual(['a->b', 'b->a']);
    expect(summary.final_roles).toEqual({ primary: 'a', dr: 'b' });
    expect(summary.filters.d).toHaveLength(2);
    expect(summary.merkle_check_clean).toEqual({ a: true, b: true, c: true, d: true });
    // Issue 30: ciphertexts acknowledged through every node decrypted on the final primary, c and d (a violation otherwise).
    expect(summary.transit_ciphertexts_checked).toBeGreaterThan(50);
    // Every cycle rotated the key on the primary of the moment (through both failovers).
    expect(summary.key_terms).toEqual([2, 3, 4, 5, 6]);
    expect(Object.keys(summary.convergence_ms).sort()).toEqual(['b', 'c', 'd']);
    const history = (await readFile(join(out, `nemesis-${SEED}.jsonl`), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Op);
    expect(history).toHaveLength(summary.operations);
    expect(new Set(history.map((o) => o.node))).toEqual(new Set(['a', 'b', 'c', 'd']));
    // The saved run judges the same offline; with an acknowledged value taken out of the final data, it is a loss.
    const saved = join(out, `nemesis-${SEED}.summary.json`);
    expect(await recheck(saved)).toMatchObject({ acknowledged: summary.acknowledged, lost: 0, violations: [] });
    const [dropped] = Object.keys(summary.final_data);
    await writeFile(saved, JSON.stringify({ ...summary, final_data: { ...summary.final_data, [dropped as string]: undefined } }));
    const tampered = (await recheck(saved)).violations;
    expect(tampered.length).toBeGreaterThan(0);
    expect(tampered.every((v) => v['type'] === 'lost-acknowledged-write' && v['key'] === dropped)).toBe(true);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}, 180_000);
