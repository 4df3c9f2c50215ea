/**
 * What DR replication refuses, and that a refusal changes nothing: expired and reused activation
 * tokens, a revoked secondary, DR operation token attempts with a wrong nonce, a repeated share or
 * a bad OTP, a primary of another replication set, and update-primary with both token and
 * addresses. In-process nodes over real gRPC/mTLS on 127.0.0.1.
 */
import { eventually } from '../harness/eventually.js';
import { DR, OP, drOperationToken as opToken, drStatus as status, inSync as synced, secondaryToken as token } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const inSync = (p: TestNode, s: TestNode) => synced(p, s, { streaming: true });

/** The fields a refused request must leave as they were. */
async function snapshot(n: TestNode): Promise<Record<string, unknown>> {
  const s = await status(n);
  return {
    mode: s.mode,
    cluster_id: s.cluster_id,
    merkle_root: s.merkle_root,
    last_wal: s.last_wal,
    secondary_id: s.secondary_id,
    primary_cluster_addr: s.primary_cluster_addr,
    known_primary_cluster_addrs: s.known_primary_cluster_addrs,
  };
}

describe('DR refusals', () => {
  const nodes: TestNode[] = [];
  let a: TestNode; // primary of set A
  let s: TestNode; // A's secondary
  let firstJwt = '';
  let sOp = '';

  /** s's snapshot once it has applied everything a has committed (token issuance writes too). */
  const settled = async () => {
    await inSync(a, s);
    return snapshot(s);
  };

  const start = async (): Promise<TestNode> => {
    const n = await startTestNode();
    nodes.push(n);
    return n;
  };

  beforeAll(async () => {
    a = await start();
    await a.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    for (let i = 0; i < 5; i++) await a.call('PUT', `secret/data/seed/${i}`, { data: { i } });
    expect((await a.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
    s = await start();
    firstJwt = await token(a, 'dr-1');
    expect((await s.call('POST', `${DR}/secondary/enable`, { token: firstJwt })).status).toBe(204);
    await inSync(a, s);
    // s took over a's seal: a's shares make its DR operation tokens.
    sOp = await opToken(s, a.unsealKeys.slice(0, 2));
  }, 30_000);

  afterAll(async () => {
    for (const n of nodes.reverse()) await n.stop();
  });

  test('an expired activation token is refused, and the would-be secondary keeps its data', async () => {
    const c = await start();
    await c.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    expect((await c.call('PUT', 'secret/data/mine', { data: { keep: 'me' } })).status).toBe(200);
    const before = await snapshot(c);
    const jwt = await token(a, 'dr-expired', '1s');
    // The primary's own view of the token, polled without spending it.
    await eventually(async () => expect((await a.call('POST', 'sys/wrapping/lookup', { token: jwt }, { token: null })).status).toBe(400), {
      timeoutMs: 5_000,
      intervalMs: 100,
    });
    const r = await c.call('POST', `${DR}/secondary/enable`, { token: jwt });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(/refused the activation token: .*expired/);
    expect(await snapshot(c)).toEqual(before);
    expect(before.mode).toBe('disabled');
    // No wipe happened.
    expect((await c.call('GET', 'secret/data/mine')).body.data.data).toEqual({ keep: 'me' });
  }, 20_000);

  test('a used activation token is refused on another cluster', async () => {
    const c = nodes[2] as TestNode;
    const before = await snapshot(c);
    const r = await c.call('POST', `${DR}/secondary/enable`, { token: firstJwt });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(/refused the activation token: wrapping token is not valid/);
    expect(await snapshot(c)).toEqual(before);
    expect((await c.call('GET', 'secret/data/mine')).body.data.data).toEqual({ keep: 'me' });
    // And on the secondary that used it: nothing moves either.
    const sBefore = await settled();
    const again = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: sOp, token: firstJwt });
    expect(again.status).toBe(400);
    expect(again.body.errors[0]).toMatch(/refused the activation token: wrapping token is not valid/);
    expect(await snapshot(s)).toEqual(sBefore);
  }, 20_000);

  test('a wrong nonce is refused and the error names the right one; progress is kept', async () => {
    const before = await settled();
    const attempt = await s.call('POST', `${OP}/attempt`, {}, { token: null });
    expect(attempt.status).toBe(200);
    const nonce = attempt.body.nonce as string;
    expect((await s.call('POST', `${OP}/update`, { key: a.unsealKeys[0], nonce }, { token: null })).body.progress).toBe(1);
    const wrong = await s.call('POST', `${OP}/update`, { key: a.unsealKeys[1], nonce: '00000000-0000-0000-0000-000000000000' }, { token: null });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors[0]).toContain(nonce);
    const st = await s.call('GET', `${OP}/attempt`, undefined, { token: null });
    expect(st.body).toMatchObject({ started: true, nonce, progress: 1, complete: false });
    expect(await snapshot(s)).toEqual(before);
    expect((await s.call('DELETE', `${OP}/attempt`, undefined, { token: null })).status).toBe(204);
  });

  test('a share given twice is refused without counting it', async () => {
    const before = await settled();
    const attempt = await s.call('POST', `${OP}/attempt`, {}, { token: null });
    expect(attempt.status).toBe(200);
    const nonce = attempt.body.nonce as string;
    expect((await s.call('POST', `${OP}/update`, { key: a.unsealKeys[0], nonce }, { token: null })).body.progress).toBe(1);
    const twice = await s.call('POST', `${OP}/update`, { key: a.unsealKeys[0], nonce }, { token: null });
    expect(twice.status).toBe(400);
    expect(twice.body.errors[0]).toMatch(/share already provided/);
    expect((await s.call('GET', `${OP}/attempt`, undefined, { token: null })).body).toMatchObject({ nonce, progress: 1, complete: false });
    expect(await snapshot(s)).toEqual(before);
    expect((await s.call('DELETE', `${OP}/attempt`, undefined, { token: null })).status).toBe(204);
  });

  test('an OTP of the wrong length is refused and starts no attempt', async () => {
    const before = await settled();
    for (const otp of ['short', `hvs.${'a'.repeat(25)}`]) {
      const r = await s.call('POST', `${OP}/attempt`, { otp }, { token: null });
      expect(r.status).toBe(400);
    }
    expect((await s.call('GET', `${OP}/attempt`, undefined, { token: null })).body).toMatchObject({ started: false, nonce: '', progress: 0 });
    expect(await snapshot(s)).toEqual(before);
  });

  test('a primary of another replication set does not accept this secondary\'s certificate', async () => {
    const b = await start();
    expect((await b.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
    const bAddr = (await status(b)).primary_cluster_addr as string;
    expect(bAddr).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const before = await settled();
    const r = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: sOp, update_primary_addrs: [bAddr] });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(/none of the update_primary_addrs answered/);
    expect(await snapshot(s)).toEqual(before);
    // Still A's: a new write on A streams in.
    await a.call('PUT', 'secret/data/after-foreign', { data: { v: 1 } });
    expect((await inSync(a, s)).primary_cluster_addr).toBe(before.primary_cluster_addr);
  }, 20_000);

  test('token and update_primary_addrs together are refused before the token is spent', async () => {
    const jwt = await token(a, 'dr-both');
    const before = await settled();
    const r = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: sOp, token: jwt, update_primary_addrs: [before.primary_cluster_addr] });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(/mutually exclusive/);
    expect(await snapshot(s)).toEqual(before);
    expect((await a.call('POST', 'sys/wrapping/lookup', { token: jwt }, { token: null })).status).toBe(200);
  });

  // One test: each step acts on what the one before left (a revoked id), so they are not split.
  test('revoke-secondary while streaming cuts the secondary off at once; it stays refused and shows not ready; its id cannot be reissued, but a new token for a new id works', async () => {
    await inSync(a, s);
    expect((await a.call('POST', `${DR}/primary/revoke-secondary`, { id: 'dr-1' })).status).toBe(204);
    const revokedAt = await eventually(async () => {
      const st = await status(s);
      expect(st.state).not.toBe('stream-wals');
      return st;
    }, { timeoutMs: 2_000, intervalMs: 20 });
    expect((await status(a)).known_secondaries).not.toContain('dr-1');

    // Writes on the primary no longer reach it, through several reconnect attempts. A negative:
    // time must pass to show it, so this samples for a fixed 3 s rather than polling for a state.
    await a.call('PUT', 'secret/data/after-revoke', { data: { v: 1 } });
    const deadline = Date.now() + 3_000;
    const seen = new Set<string>();
    while (Date.now() < deadline) {
      const st = await status(s);
      seen.add(st.state);
      expect(st.last_wal).toBe(revokedAt.last_wal);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(seen.has('stream-wals')).toBe(false);
    const st = await status(s);
    expect(st.last_error).toMatch(/revoked|not registered/);
    expect(st).toMatchObject({ mode: 'secondary', cluster_id: revokedAt.cluster_id, merkle_root: revokedAt.merkle_root });
    // While refused, status reports the connection as not ready.
    expect(st.connection_state).not.toBe('ready');

    expect((await a.call('POST', `${DR}/primary/secondary-token`, { id: 'dr-1' })).status).toBe(400);
    const jwt = await token(a, 'dr-1-again');
    expect((await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: sOp, token: jwt })).status).toBe(204);
    const again = await inSync(a, s);
    expect(again).toMatchObject({ secondary_id: 'dr-1-again', cluster_id: revokedAt.cluster_id });
    const known = (await status(a)).known_secondaries;
    expect(known).toContain('dr-1-again');
    expect(known).not.toContain('dr-1');
  }, 30_000);
});
