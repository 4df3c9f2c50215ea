/**
 * Issue 17 item 9: a paths filter belongs to a secondary id. After update-primary with a new
 * token (a new id, which the primary has no filter for), the secondary holds what an unfiltered
 * one holds, new writes to the mount once filtered arrive, and a restart keeps it so. In-process
 * nodes over real HTTP, gRPC/mTLS and LevelDB; the secondary restarts on its own storage.
 */
import { eventually } from '../harness/eventually.js';
import { generateRoot } from '../harness/dr.js';
import { joinSecondary } from '../harness/cluster.js';
import { inSync, PERF, replStatus, secondaryToken } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const kv2 = { type: 'kv', options: { version: '2' } };
const WAIT = { timeoutMs: 20_000, intervalMs: 50 };

let p: TestNode;
let s: TestNode;
afterAll(async () => {
  await s?.stop();
  await p?.stop();
});

test('update-primary with a new token drops the old id\'s filter: the secondary holds the unfiltered data set, new writes arrive, and it stays so across a restart', async () => {
  [p, s] = await Promise.all([startTestNode(), startTestNode()]);
  for (const m of ['secret', 'other']) expect((await p.call('POST', `sys/mounts/${m}`, kv2)).status).toBe(204);
  expect((await p.call('PUT', 'other/data/a', { data: { v: 'a' } })).status).toBe(200);
  expect((await p.call('PUT', 'secret/data/s', { data: { v: 's' } })).status).toBe(200);
  await joinSecondary(p, s, 'east', 'performance');
  const root = await generateRoot(s.apiAddr, p.unsealKeys.slice(0, 2));
  const read = (path: string) => s.call('GET', path, undefined, { token: root });

  // Filtered under its first id: other/ is not on the secondary.
  expect((await p.call('POST', `${PERF}/primary/paths-filter/east`, { mode: 'deny', paths: ['other'] })).status).toBe(204);
  await eventually(async () => expect((await read('other/data/a')).status).toBe(404), WAIT);
  expect((await s.call('GET', `${PERF}/secondary/dynamic-filter/east`, undefined, { token: root })).body.data.dynamic_filtered_mounts).toEqual(['other/']);

  // A new token, so a new id: the primary has no filter for it.
  const jwt = await secondaryToken(p, 'east-2', undefined, 'performance');
  expect((await s.call('POST', `${PERF}/secondary/update-primary`, { token: jwt }, { token: root })).status).toBe(204);
  // No filter for the new id: a 200 with an empty body (spec 4.2).
  expect((await p.call('GET', `${PERF}/primary/paths-filter/east-2`)).status).toBe(200);
  expect((await p.call('PUT', 'other/data/b', { data: { v: 'b' } })).status).toBe(200);

  // Restarted at once, on its own storage: whatever it had done by then, it ends unfiltered.
  const dir = s.dataDir;
  await s.stop({ keepDir: true });
  s = await startTestNode({ dir, initialize: false });
  for (const key of p.unsealKeys.slice(0, 2)) expect((await s.call('PUT', 'sys/unseal', { key }, { token: null })).status).toBe(200);
  expect(await replStatus(s, 'performance')).toMatchObject({ mode: 'secondary', secondary_id: 'east-2' });
  await inSync(p, s, { kind: 'performance' });
  await eventually(async () => {
    expect((await read('other/data/a')).body.data?.data).toEqual({ v: 'a' });
    expect((await read('other/data/b')).body.data?.data).toEqual({ v: 'b' });
  }, WAIT);
  expect((await read('secret/data/s')).body.data.data).toEqual({ v: 's' });
  expect((await s.call('GET', `${PERF}/secondary/dynamic-filter/east-2`, undefined, { token: root })).body.data).toEqual({ dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] });

  // And what is written from now on arrives through the stream.
  expect((await p.call('PUT', 'other/data/c', { data: { v: 'c' } })).status).toBe(200);
  await eventually(async () => expect((await read('other/data/c')).body.data?.data).toEqual({ v: 'c' }), WAIT);
}, 90_000);
