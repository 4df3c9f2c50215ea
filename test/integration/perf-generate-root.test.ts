/**
 * Issue 8 item 2.3 on a performance secondary: it adopted its primary's seal at activation, so
 * `sys/generate-root` there takes the primary's unseal keys (not its own old ones), and the token
 * it makes is local to it: valid on the secondary, unknown to the primary.
 */
import { decodeOtp } from '../../src/seal/root-generation-encoding.js';
import { joinSecondary } from '../harness/cluster.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const GR = 'sys/generate-root';
const open = { token: null } as const;

let p: TestNode;
let s: TestNode;
beforeAll(async () => {
  [p, s] = await Promise.all([startTestNode(), startTestNode()]);
  await joinSecondary(p, s, 'perf-root', 'performance');
}, 60_000);
afterAll(async () => {
  await Promise.all([s?.stop(), p?.stop()]);
});

test('a performance secondary generates a root token of its own from the primary\'s shares', async () => {
  // The secondary's own pre-activation shares no longer open anything: at the threshold they do
  // not combine into the root key it now has (the primary's), and no token is made.
  const first = await s.call('PUT', `${GR}/attempt`, {}, open);
  expect(first.status).toBe(200);
  expect((await s.call('PUT', `${GR}/update`, { key: s.unsealKeys[0], nonce: first.body.nonce }, open)).status).toBe(200);
  const refused = await s.call('PUT', `${GR}/update`, { key: s.unsealKeys[1], nonce: first.body.nonce }, open);
  expect(refused.status).toBe(400);
  expect(refused.body.errors[0]).toBeDefined();
  await s.call('DELETE', `${GR}/attempt`, undefined, open);

  const started = await s.call('PUT', `${GR}/attempt`, {}, open);
  expect(started.status).toBe(200);
  const { nonce, otp } = started.body;
  let last: any;
  for (const key of p.unsealKeys.slice(0, 2)) {
    const r = await s.call('PUT', `${GR}/update`, { key, nonce }, open);
    expect(r.status).toBe(200);
    last = r.body;
  }
  expect(last).toMatchObject({ complete: true });
  const token = decodeOtp(last.encoded_token, otp);
  const self = await s.call('GET', 'auth/token/lookup-self', undefined, { token });
  expect(self.status).toBe(200);
  expect(self.body.data.policies).toEqual(['root']);
  // Tokens are local to a performance secondary: the primary does not know this one.
  expect((await p.call('GET', 'auth/token/lookup-self', undefined, { token })).status).toBe(403);
}, 60_000);
