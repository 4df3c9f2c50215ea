/**
 * Issue 7 item 1 on real processes: a DR secondary paused with SIGSTOP stops heartbeating, and the
 * primary's status says so within its heartbeat timeout (3 s by default) instead of reporting it
 * connected and streaming; after SIGCONT it is connected again, with a newer last_heartbeat.
 */
import { drStatus, eventually, startCluster, useHarness, type Body } from '../harness/index.js';

const h = useHarness();

const view = (status: Body, id: string): Body => (status.secondaries as Body[] | undefined)?.find((x) => x.node_id === id);

test('a paused DR secondary shows disconnected on the primary, and connected again once resumed', async () => {
  const cluster = await startCluster(h, { primaryInit: {}, dr: ['dr-paused'] });
  const p = cluster.primary;
  const s = cluster.dr[0]!;
  const before = await eventually(async () => {
    const v = view(await drStatus(p.apiAddr), 'dr-paused');
    expect(v).toMatchObject({ connection_status: 'connected' });
    return v;
  });

  s.proc.kill('SIGSTOP');
  try {
    await eventually(async () => {
      expect(view(await drStatus(p.apiAddr), 'dr-paused')).toMatchObject({ connection_status: 'disconnected', state: 'idle' });
    }, { timeoutMs: 10_000, intervalMs: 100 });
  } finally {
    s.proc.kill('SIGCONT');
  }

  const after = await eventually(async () => {
    const v = view(await drStatus(p.apiAddr), 'dr-paused');
    expect(v).toMatchObject({ connection_status: 'connected' });
    expect(Date.parse(v.last_heartbeat)).toBeGreaterThan(Date.parse(before.last_heartbeat));
    return v;
  }, { timeoutMs: 15_000, intervalMs: 100 });
  expect(after.last_heartbeat).not.toBe('');
}, 60_000);
