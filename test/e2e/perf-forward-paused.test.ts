/**
 * Issue 17 item 4 on real processes: a write forwarded by a performance secondary to a primary
 * paused with SIGSTOP has left the secondary; when the connection then drops, the primary may
 * still apply it once resumed. So the answer must say the outcome is unknown and the client should
 * read back before retrying, never "nothing was written".
 */
import { eventually, startCluster, useHarness, vault } from '../harness/index.js';

const h = useHarness();

test('a forwarded write sent to a paused primary answers that its outcome is unknown, not that nothing was written', async () => {
  const { primary: p, performance: [s] } = await startCluster(h, { mountKv2: true, performance: ['perf-paused'] });
  const pv = vault(p.apiAddr, p.rootToken);
  const sv = vault(s!.apiAddr, s!.rootToken);
  await eventually(async () => expect((await sv.get('auth/token/lookup-self')).status).toBe(200), { timeoutMs: 20_000 });
  // A first forwarded write: the secondary's connection to its primary is up.
  expect((await sv.put('secret/data/k', { data: { v: 'first' } })).status).toBe(200);

  p.proc.kill('SIGSTOP');
  let answer;
  try {
    answer = await sv.put('secret/data/k', { data: { v: 'while-paused' } });
  } finally {
    p.proc.kill('SIGCONT');
  }
  expect(answer.status).toBe(503);
  expect(answer.body.errors).toEqual([expect.stringMatching(/outcome is unknown, the write may have been applied on the primary; read it back before retrying/)]);
  expect(answer.body.errors[0]).not.toMatch(/nothing was written/);
  // Whatever the primary did with it, the secondary ends up with the primary's value (read back).
  const onPrimary = await eventually(async () => {
    const r = await pv.get('secret/data/k');
    expect(r.status).toBe(200);
    return r.body.data.data;
  }, { timeoutMs: 20_000 });
  expect(['first', 'while-paused']).toContain(onPrimary.v);
  await eventually(async () => expect((await sv.get('secret/data/k')).body.data.data).toEqual(onPrimary), { timeoutMs: 20_000 });
}, 120_000);
