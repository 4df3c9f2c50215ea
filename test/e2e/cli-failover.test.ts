/**
 * The built CLI drives a DR failover on real processes (docs/failover-runbook.md runs these very
 * commands): `operator dr failover -plan` on a DR secondary describes the primary, lag, RPO, the
 * promote verdict and the performance secondary without changing anything; with the primary dead,
 * `failover` takes the primary's unseal key shares on stdin, promotes, and moves the performance
 * secondary onto the new primary; a rerun is a no-op; `failback` rejoins the restarted old primary
 * as a DR secondary of the new one. `write -wait` waits for stream-wals on update-primary.
 */
import { readFile } from 'node:fs/promises';
import {
  DR, PERF, drStatus, eventually, replStatus, runCli, startCluster, useHarness, vault, waitInSync, type StartedNode,
} from '../harness/index.js';

const h = useHarness();

test('failover -plan changes nothing; failover promotes and moves the performance secondary; a rerun is a no-op; failback rejoins the old primary', async () => {
  // As `npm run cluster` (and so the runbook): 5 shares, threshold 3.
  const { primary: old, dr: [s], performance: [ps] } = await startCluster(h, { mountKv2: true, primaryInit: { shares: 5, threshold: 3 }, dr: ['dr-east'], performance: ['perf-a'] });
  const root = old.rootToken;
  const shares = old.unsealKeys.slice(0, 3).map((k) => `${k}\n`).join('');
  /** Every CLI command run, to check the runbook against (see the end). */
  const ran: { args: string[]; env: Record<string, string> }[] = [];
  const cli = (args: string[], stdin?: string, env: Record<string, string> = { TESSERA_TOKEN: root }) => {
    ran.push({ args, env });
    return runCli(args, 60_000, { env, ...(stdin !== undefined ? { stdin } : {}) });
  };
  // The performance secondary's own root token (startCluster generated it there from the primary's shares).
  const perfToken = ps!.rootToken;
  expect((await vault(ps!.apiAddr, perfToken).get('auth/token/lookup-self')).status).toBe(200);
  expect((await vault(old.apiAddr, root).put('secret/data/before', { data: { value: 'v1' } })).status).toBe(200);
  await waitInSync(old.apiAddr, s!.apiAddr);
  await waitInSync(old.apiAddr, ps!.apiAddr, 20_000, 'performance');
  const modes = async (nodes: StartedNode[]) => Promise.all(nodes.map(async (n) => [(await drStatus(n.apiAddr)).mode, (await replStatus(n.apiAddr, 'performance')).mode]));
  const before = await modes([old, s!, ps!]);
  expect(before).toEqual([['primary', 'primary'], ['secondary', 'disabled'], ['disabled', 'secondary']]);

  // --- The plan, primary up: everything it reports, and nothing changes.
  const planned = await cli(['operator', 'dr', 'failover', `-address=${s!.apiAddr}`, '-plan', '-format=json']);
  expect(planned.code).toBe(0);
  const plan = JSON.parse(planned.stdout);
  expect(plan).toMatchObject({
    secondary: { address: s!.apiAddr, mode: 'secondary', state: 'stream-wals', secondary_id: 'dr-east', lag_entries: 0, lag_ms: 0 },
    primary: { api_address: old.apiAddr, reachable: true, health_status: 200, mode: 'primary' },
    promote: { already_primary: false, passes_without_force: true },
    rpo: { known_entries: 0, primary_entries: 0 },
    performance_secondaries: { source: 'primary', secondaries: [{ id: 'perf-a', api_address: ps!.apiAddr, connection_status: 'connected' }] },
  });
  expect(plan.secondary.last_remote_wal).toBe(plan.secondary.primary_last_wal);
  expect(plan.secondary.last_heartbeat_age_ms).toBeGreaterThanOrEqual(0);
  expect(plan.secondary.last_heartbeat_age_ms).toBeLessThan(10_000);
  expect(plan.warnings.join('\n')).toMatch(/two primaries/);
  expect(plan.commands).toEqual([
    `tessera write -address=${old.apiAddr} sys/replication/dr/primary/demote`,
    `tessera operator dr failover -address=${s!.apiAddr} -perf-secondary=${ps!.apiAddr}`,
    `tessera operator dr failback -address=${s!.apiAddr} -old-primary=${old.apiAddr}`,
  ]);
  const text = await cli(['operator', 'dr', 'failover', `-address=${s!.apiAddr}`, '-plan']);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/^Failover plan \(nothing was changed\)/);
  expect(text.stdout).toMatch(/^Primary Reachable\s+yes \(sys\/health 200, dr mode primary\)$/m);
  expect(text.stdout).toMatch(/^Lag\s+0 entries \(0 ms\)$/m);
  expect(text.stdout).toMatch(/^Promote Without Force\s+passes$/m);
  expect(text.stdout).toMatch(/^RPO \(primary answered\)\s+0 entries$/m);
  expect(text.stdout).toMatch(new RegExp(`^\\s+perf-a\\s+${ps!.apiAddr} \\(connected\\)$`, 'm'));
  expect(await modes([old, s!, ps!])).toEqual(before);

  // --- The primary dies. The plan says so, and still names the RPO as the secondary knows it.
  await old.stop();
  const down = JSON.parse((await cli(['operator', 'dr', 'failover', `-address=${s!.apiAddr}`, '-plan', '-format=json', `-perf-secondary=${ps!.apiAddr}`])).stdout);
  expect(down).toMatchObject({
    primary: { reachable: false },
    promote: { passes_without_force: true },
    rpo: { known_entries: 0 },
    // The ids come from the performance role the DR secondary holds; the address from the flag, matched by id.
    performance_secondaries: { source: 'dr secondary and command line', secondaries: [{ id: 'perf-a', api_address: ps!.apiAddr }] },
  });
  expect(down.rpo.primary_entries).toBeUndefined();
  expect(down.performance_secondaries.note).toBeUndefined();
  // Without the flag the plan still names who must follow, and says what it lacks.
  const downText = await cli(['operator', 'dr', 'failover', `-address=${s!.apiAddr}`, '-plan']);
  expect(downText.stdout).toMatch(/^Primary Reachable\s+no \(/m);
  expect(downText.stdout).toMatch(/^Performance Secondaries\s+1 \(source: dr secondary\)$/m);
  expect(downText.stdout).toMatch(/^\s+perf-a\s+address unknown$/m);
  expect(downText.stdout).toMatch(/^Note: no address known for perf-a .*-perf-secondary=ADDR$/m);

  // --- Failover with the primary's shares on stdin (the hidden prompt's non-terminal form).
  // One token per performance secondary (its tokens are local), named by its address.
  const failover = await cli(['operator', 'dr', 'failover', `-address=${s!.apiAddr}`, `-perf-secondary=${ps!.apiAddr}`, `-perf-token=${ps!.apiAddr}=${perfToken}`], shares);
  expect(ok(failover)).toEqual({ code: 0, output: '' });
  expect(failover.stderr).toMatch(/Progress: 2\/3/);
  expect(failover.stderr).not.toMatch(/WARNING/);
  const newPerf = await replStatus(s!.apiAddr, 'performance');
  expect(failover.stdout).toContain(`Failover summary: ${s!.apiAddr} is the primary (cluster address ${newPerf.primary_cluster_addr})`);
  const stepRows = (out: string) => [...out.matchAll(/^(promote|revoke-token|update-primary|demote|stream) \S+\s+(\w+):/gm)].map((m) => [m[1], m[2]]);
  expect(stepRows(failover.stdout)).toEqual([['promote', 'done'], ['update-primary', 'done']]);
  expect(await drStatus(s!.apiAddr)).toMatchObject({ mode: 'primary', state: 'running' });
  expect(newPerf).toMatchObject({ mode: 'primary', known_secondaries: ['perf-a'] });
  expect(await replStatus(ps!.apiAddr, 'performance')).toMatchObject({ mode: 'secondary', state: 'stream-wals', primary_cluster_addr: newPerf.primary_cluster_addr });
  // The new primary takes writes, and the performance secondary serves them.
  expect((await vault(s!.apiAddr, root).put('secret/data/after', { data: { value: 'v2' } })).status).toBe(200);
  await eventually(async () => expect((await vault(ps!.apiAddr, perfToken).get('secret/data/after')).body?.data?.data).toEqual({ value: 'v2' }), { timeoutMs: 15_000 });

  // --- A rerun finds everything done: no token is asked for (stdin is closed), nothing moves.
  // With one secondary, the token without an address (the old single form) is its token.
  const rerun = await cli(['operator', 'dr', 'failover', `-address=${s!.apiAddr}`, `-perf-secondary=${ps!.apiAddr}`, `-perf-token=${perfToken}`]);
  expect(rerun.code).toBe(0);
  expect(rerun.stdout).toMatch(/^promote \S+\s+skipped: already a DR primary$/m);
  expect(rerun.stdout).toMatch(/^update-primary \S+\s+skipped: perf-a: already streaming from /m);

  // --- write -wait: re-pointing the performance secondary at the same address waits for stream-wals.
  const waited = await cli(
    ['write', '-wait', '-wait-timeout=30s', `-address=${ps!.apiAddr}`, `${PERF}/secondary/update-primary`, `update_primary_addrs=${newPerf.primary_cluster_addr}`],
    undefined, { TESSERA_TOKEN: perfToken },
  );
  expect(waited.code).toBe(0);
  expect(waited.stdout).toBe(`Success! Data written to: ${PERF}/secondary/update-primary\n`);
  expect(waited.stderr).toMatch(/^performance: mode secondary, state stream-wals, applied \d+\/\d+ lag 0 entries \(0 ms\)$/m);
  expect(waited.stderr).toMatch(/^Done: performance secondary streaming \(stream-wals\)$/m);
  const misplaced = await cli(['write', '-wait', `-address=${s!.apiAddr}`, 'secret/data/x', 'value=1']);
  expect(misplaced).toMatchObject({ code: 2, stdout: '' });
  expect((await vault(s!.apiAddr, root).get('secret/data/x')).status).toBe(404);

  // --- The old primary comes back (as a primary) and fails back as a DR secondary of the new one.
  const back = await h.startNode({ dataDir: old.dataDir });
  for (const key of old.unsealKeys.slice(0, 3)) expect((await cli(['operator', 'unseal', `-address=${back.apiAddr}`], `${key}\n`)).code).toBe(0);
  expect((await drStatus(back.apiAddr)).mode).toBe('primary');
  const failback = await cli(['operator', 'dr', 'failback', `-address=${s!.apiAddr}`, `-old-primary=${back.apiAddr}`], shares);
  expect(ok(failback)).toEqual({ code: 0, output: '' });
  expect(stepRows(failback.stdout)).toEqual([['demote', 'done'], ['update-primary', 'done'], ['revoke-token', 'done'], ['stream', 'done']]);
  const newDr = await drStatus(s!.apiAddr);
  expect(await drStatus(back.apiAddr)).toMatchObject({ mode: 'secondary', state: 'stream-wals', primary_cluster_addr: newDr.primary_cluster_addr });
  await waitInSync(s!.apiAddr, back.apiAddr);
  // The roles swapped: the plan on the old primary shows a streaming secondary of a reachable primary.
  const swapped = await cli(['operator', 'dr', 'failover', `-address=${back.apiAddr}`, '-plan']);
  expect(swapped.code).toBe(0);
  expect(swapped.stdout).toMatch(/^Secondary State\s+stream-wals/m);
  expect(swapped.stdout).toMatch(/^Lag\s+0 entries \(0 ms\)$/m);
  expect(swapped.stdout).toMatch(new RegExp(`^Primary\\s+${s!.apiAddr} `, 'm'));
  expect(swapped.stdout).toMatch(/^Primary Reachable\s+yes \(sys\/health 200, dr mode primary\)$/m);
  const again = await cli(['operator', 'dr', 'failback', `-address=${s!.apiAddr}`, `-old-primary=${back.apiAddr}`]);
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(/skipped: already streaming from /);
  expect((await vault(s!.apiAddr).get(`${DR}/status`)).body.data.known_secondaries).toHaveLength(1);

  // Every `tessera` command of the runbook is one this test ran (values named as the runbook names
  // them), except the batch-token section's, which test/integration/dr-batch-token.test.ts runs.
  const names: [string, string][] = [
    [s!.apiAddr, '$S'], [old.apiAddr, '$P'], [back.apiAddr, '$P'], [ps!.apiAddr, '$PS1'],
    [perfToken, '$PERF_TOKEN'], [String(newPerf.primary_cluster_addr), '$NEW_CLUSTER_ADDR'],
  ];
  // A value is named where it is a whole argument or stands after '=' up to the next '=' or the end.
  const escape = (v: string) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const named = (arg: string) => names.reduce((a, [value, name]) => (a === value ? name : a.replace(new RegExp(`=${escape(value)}(?==|$)`, 'g'), () => `=${name}`)), arg);
  const ranLines = new Set(ran.map((r) => ['tessera', ...r.args.map(named)].join(' ')));
  const documented = runbookCommands(await readFile(new URL('../../docs/failover-runbook.md', import.meta.url), 'utf8'));
  expect(documented.length).toBeGreaterThanOrEqual(8);
  expect(documented.filter((c) => !ranLines.has(c))).toEqual([]);
}, 120_000);

/** The exit code, and the output only when it is not 0 (so a failure shows why). */
function ok(r: { code: number | null; stdout: string; stderr: string }): { code: number | null; output: string } {
  return { code: r.code, output: r.code === 0 ? '' : `${r.stdout}\n${r.stderr}` };
}

/** The `tessera ...` commands in the runbook's sh blocks, up to a pipe, `;`, `)` or comment, unquoted. */
function runbookCommands(full: string): string[] {
  const at = full.indexOf('## Pre-stage a DR operation batch token');
  const md = at < 0 ? full : full.slice(0, at) + full.slice(full.indexOf('\n## ', at + 1) + 1 || full.length);
  const blocks = [...md.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks.flatMap((b) => b.split('\n')).flatMap((line) => {
    const at = line.search(/(^|[\s|(])tessera /);
    if (at < 0) return [];
    const cmd = line.slice(at).trim().split(/ \| |;|\)| #/)[0]!;
    return [cmd.replace(/["']/g, '').replace(/\$\{(\w+)\}/g, '$$$1').trim().split(/\s+/).join(' ')];
  });
}
