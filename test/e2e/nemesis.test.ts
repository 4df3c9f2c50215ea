/**
 * The nemesis (scripts/nemesis.mjs) as CI runs it: a fixed seed, five short cycles of random
 * faults over a real topology (primary, DR secondary, two filtered performance secondaries, every
 * cluster link through a TCP proxy) under a recorded workload, and zero violations from the
 * checker. The checker itself is proved on hand-made histories: it must catch a lost acknowledged
 * write, a read going backwards and a filter leak, or a clean run would prove nothing.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { checkAcknowledged, checkFilterLeaks, checkMonotonicReads, faultSchedule, type Op } from '../../scripts/nemesis-check.mjs';

const run = promisify(execFile);
const SEED = 11;
const CYCLES = 5;

const op = (o: Partial<Op> & Pick<Op, 'id' | 'kind' | 'node' | 'start' | 'end' | 'outcome'>): Op => ({ client: 'x', mount: 'secret', key: 'k', ...o });

describe('nemesis checker', () => {
  test('a lost acknowledged write, a read going backwards and a filter leak are each a violation; an unknown write may win', () => {
    const w = (id: number, value: string, outcome: Op['outcome'], version?: number) => op({ id, kind: 'write', node: 'a', start: id * 10, end: id * 10 + 5, outcome, value, ...(version ? { version } : {}) });
    const history = [w(1, 'v1', 'ok', 1), w(2, 'v2', 'ok', 2), w(3, 'v3', 'unknown')];
    expect(checkAcknowledged(history, { 'secret/k': { value: 'v2', version: 2 } }).lost).toEqual([]);
    expect(checkAcknowledged(history, { 'secret/k': { value: 'v3', version: 3 } }).lost).toEqual([]);
    const lost = checkAcknowledged(history, { 'secret/k': { value: 'v1', version: 1 } });
    expect(lost.lostWrites).toBe(1);
    expect(lost.lost[0]).toMatchObject({ key: 'secret/k', expected: 'v2' });
    expect(checkAcknowledged(history, {}).lostWrites).toBe(2);
    // Acknowledged by an old primary after it was replaced: failover loss, not a violation.
    const old = [w(1, 'v1', 'ok', 1), { ...w(2, 'v2', 'ok', 2), node: 'old' }];
    const failover = checkAcknowledged(old, { 'secret/k': { value: 'v1', version: 1 } }, { oldPrimaries: [{ node: 'old', replacedAt: 15 }] });
    expect(failover).toMatchObject({ lostWrites: 0, failoverLoss: [2] });

    const r = (id: number, version: number, start: number) => op({ id, kind: 'read', node: 'c', start, end: start + 1, outcome: 'ok', version });
    expect(checkMonotonicReads([r(1, 1, 0), r(2, 3, 10), r(3, 3, 20)])).toEqual([]);
    expect(checkMonotonicReads([r(1, 1, 0), r(2, 3, 10), r(3, 2, 20)])).toEqual([{ node: 'c', key: 'secret/k', earlier: { id: 2, version: 3 }, later: { id: 3, version: 2 } }]);
    // Overlapping reads may see either order.
    expect(checkMonotonicReads([op({ id: 1, kind: 'read', node: 'c', start: 0, end: 50, outcome: 'ok', version: 3 }), r(2, 2, 10)])).toEqual([]);

    const leak = op({ id: 9, kind: 'read', node: 'c', mount: 'other', start: 0, end: 1, outcome: 'ok', status: 200, version: 1 });
    expect(checkFilterLeaks([leak, { ...leak, id: 10, status: 404 }], { c: ['secret'] })).toEqual([{ node: 'c', key: 'other/k', id: 9 }]);
  });

  test('the fault schedule is a function of the seed', () => {
    expect(faultSchedule(SEED, 20, 2_000)).toEqual(faultSchedule(SEED, 20, 2_000));
    expect(faultSchedule(SEED, 20, 2_000)).not.toEqual(faultSchedule(SEED + 1, 20, 2_000));
    expect(faultSchedule(SEED, 20, 2_000).filter((f) => f.target === 'a').every((f) => f.type === 'pause' || f.type === 'partition-primary')).toBe(true);
  });
});

test(`nemesis seed ${SEED}, ${CYCLES} cycles: zero violations, every acknowledged write on the primary, every secondary converged`, async () => {
  const out = await mkdtemp(join(tmpdir(), 'nemesis-ci-'));
  try {
    const args = ['scripts/nemesis.mjs', '--cycles', String(CYCLES), '--seed', String(SEED), '--cycle-ms', '2000', '--converge-ms', '45000', '--out', out];
    const child = await run(process.execPath, args, { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 150_000 }).catch((e: { code?: number; stdout?: string; stderr?: string }) => e);
    const summary = JSON.parse(await readFile(join(out, `nemesis-${SEED}.summary.json`), 'utf8').catch(() => 'null')) as Record<string, any> | null;
    if (summary === null) throw new Error(`nemesis wrote no summary: ${JSON.stringify(child).slice(0, 2000)}`);
    expect(summary.violations).toEqual([]);
    expect('code' in child ? child.code : 0).toBe(0);
    expect(summary.schedule).toEqual(faultSchedule(SEED, CYCLES, 2_000));
    expect(summary.acknowledged).toBeGreaterThan(50);
    expect(summary.forwarded_writes_ok).toBeGreaterThan(0);
    expect(summary.lost).toBe(0);
    expect(summary.merkle_check_clean).toEqual({ a: true, b: true, c: true, d: true });
    expect(Object.keys(summary.convergence_ms).sort()).toEqual(['b', 'c', 'd']);
    const history = (await readFile(join(out, `nemesis-${SEED}.jsonl`), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Op);
    expect(history).toHaveLength(summary.operations);
    expect(new Set(history.map((o) => o.node))).toEqual(new Set(['a', 'c', 'd']));
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}, 170_000);
