/**
 * The built CLI drives a DR failover on real processes (docs/failover-runbook.md runs these very
 * commands): `operator dr failover -plan` on a DR secondary describes the primary, lag, RPO, the
 * promote verdict and the performance secondary without changing anything; with the primary dead,
 * `failover` takes the primary's unseal key shares on stdin, promotes, and moves the performance
 * secondary onto the new primary; a rerun is a no-op; `failback` rejoins the restarted old primary
 * as a DR secondary of the new one. `write -wait` waits for stream-wals on update-primary.
 */
import {
  DR, PERF, drStatus, eventually, replStatus, runCli, startCluster, unseal, useHarness, vault, waitInSync, type StartedNode,
} from '../harness/index.js';

const h = useHarness();

test('failover -plan changes nothing; failover promotes and moves the performance secondary; a rerun is a no-op; failback rejoins the old primary', async () => {
  const { primary: old, dr: [s], performance: [ps] } = await startCluster(h, { mountKv2: true, dr: ['dr-east'], performance: ['perf-a'] });
  const root = old.rootToken;
  const shares = `${old.unsealKeys[0]}\n${old.unsealKeys[1]}\n`;
  const cli = (args: string[], stdin?: string) =>
    runCli(args, 60_000, { env: { TESSERA_TOKEN: root }, ...(stdin !== undefined ? { stdin } : {}) });
  // A performance secondary's enabling root token works again once its bootstrap is over.
  const perfToken = ps!.rootToken;
  await eventually(async () => expect((await vault(ps!.apiAddr, perfToken).get('auth/token/lookup-self')).status).toBe(200), { timeoutMs: 20_000 });
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
    performance_secondaries: { source: 'command line', secondaries: [{ api_address: ps!.apiAddr }] },
  });
  expect(down.rpo.primary_entries).toBeUndefined();
  expect(down.performance_secondaries.note).toMatch(/-perf-secondary/);

  // --- Failover with the primary's shares on stdin (the hidden prompt's non-terminal form).
  const failover = await cli(['operator', 'dr', 'failover', `-address=${s!.apiAddr}`, `-perf-secondary=${ps!.apiAddr}`, `-perf-token=${perfToken}`, '-format=json'], shares);
  expect({ code: failover.code, stderr: failover.stderr }).toMatchObject({ code: 0 });
  const summary = JSON.parse(failover.stdout);
  expect(summary.steps.map((x: { step: string; outcome: string }) => [x.step, x.outcome])).toEqual([['promote', 'done'], ['update-primary', 'done']]);
  expect(summary.not_updated_ids).toEqual([]);
  expect(failover.stderr).toMatch(/Progress: 1\/2/);
  const newPerf = await replStatus(s!.apiAddr, 'performance');
  expect(await drStatus(s!.apiAddr)).toMatchObject({ mode: 'primary', state: 'running' });
  expect(newPerf).toMatchObject({ mode: 'primary', known_secondaries: ['perf-a'], primary_cluster_addr: summary.primary_cluster_addr });
  expect(await replStatus(ps!.apiAddr, 'performance')).toMatchObject({ mode: 'secondary', state: 'stream-wals', primary_cluster_addr: newPerf.primary_cluster_addr });
  // The new primary takes writes, and the performance secondary serves them.
  expect((await vault(s!.apiAddr, root).put('secret/data/after', { data: { value: 'v2' } })).status).toBe(200);
  await eventually(async () => expect((await vault(ps!.apiAddr, perfToken).get('secret/data/after')).body?.data?.data).toEqual({ value: 'v2' }), { timeoutMs: 15_000 });

  // --- A rerun finds everything done: no token is asked for (stdin is closed), nothing moves.
  const rerun = await cli(['operator', 'dr', 'failover', `-address=${s!.apiAddr}`, `-perf-secondary=${ps!.apiAddr}`, `-perf-token=${perfToken}`]);
  expect(rerun.code).toBe(0);
  expect(rerun.stdout).toMatch(/^promote \S+\s+skipped: already a DR primary$/m);
  expect(rerun.stdout).toMatch(/^update-primary \S+\s+skipped: perf-a: already streaming from /m);

  // --- write -wait: re-pointing the performance secondary at the same address waits for stream-wals.
  const waited = await runCli(
    ['write', '-wait', '-wait-timeout=30s', `-address=${ps!.apiAddr}`, `${PERF}/secondary/update-primary`, `update_primary_addrs=${newPerf.primary_cluster_addr}`],
    60_000, { env: { TESSERA_TOKEN: perfToken } },
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
  for (const key of old.unsealKeys.slice(0, 2)) await unseal(back.apiAddr, key);
  expect((await drStatus(back.apiAddr)).mode).toBe('primary');
  const failback = await cli(['operator', 'dr', 'failback', `-address=${s!.apiAddr}`, `-old-primary=${back.apiAddr}`, '-format=json'], shares);
  expect({ code: failback.code, stderr: failback.stderr }).toMatchObject({ code: 0 });
  expect(JSON.parse(failback.stdout).steps.map((x: { step: string; outcome: string }) => [x.step, x.outcome])).toEqual([['demote', 'done'], ['update-primary', 'done'], ['stream', 'done']]);
  const newDr = await drStatus(s!.apiAddr);
  expect(await drStatus(back.apiAddr)).toMatchObject({ mode: 'secondary', state: 'stream-wals', primary_cluster_addr: newDr.primary_cluster_addr });
  await waitInSync(s!.apiAddr, back.apiAddr);
  const again = await cli(['operator', 'dr', 'failback', `-address=${s!.apiAddr}`, `-old-primary=${back.apiAddr}`]);
  expect(again.code).toBe(0);
  expect(again.stdout).toMatch(/skipped: already streaming from /);
  expect((await vault(s!.apiAddr).get(`${DR}/status`)).body.data.known_secondaries).toHaveLength(1);
}, 120_000);
