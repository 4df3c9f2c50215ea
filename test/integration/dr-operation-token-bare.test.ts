/**
 * Spec 4.3: the bare `sys/replication/dr/secondary/generate-operation-token` path creates a DR
 * operation token for a DR secondary. It is the attempt of the one generation (GET reads it,
 * POST/PUT starts it, DELETE cancels it), the same attempt `.../attempt` shows; shares go to
 * `.../update`. In-process nodes, real gRPC.
 */
import { decodeOtp } from '../../src/replication/operation-token-encoding.js';
import { startCluster } from '../harness/cluster.js';
import { useHarness, type InProcessNode } from '../harness/harness.js';
import { DR, OP } from '../support/dr.js';

const h = useHarness();
const nodes: InProcessNode[] = [];
afterEach(async () => {
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

/** A primary and its DR secondary `dr-east`, in process. */
async function pair(): Promise<[InProcessNode, InProcessNode]> {
  const { primary, dr: [secondary] } = await startCluster(h, { node: { inProcess: true }, dr: ['dr-east'] });
  nodes.push(primary, secondary!);
  return [primary, secondary!];
}

test('on a DR secondary the bare path starts, reads and cancels the one attempt; the token it makes authorizes DR operations', async () => {
  const [p, s] = await pair();
  const call = (method: string, path: string, body?: Record<string, unknown>) => s.call(method, path, body, { token: null });

  const idle = await call('GET', OP);
  expect({ status: idle.status, started: idle.body.started, required: idle.body.required }).toEqual({ status: 200, started: false, required: 2 });

  // Started at the bare path: the same attempt as .../attempt shows.
  const start = await call('POST', OP, {});
  expect(start.status).toBe(200);
  expect(start.body).toMatchObject({ started: true, progress: 0, complete: false, otp_length: 28 });
  const { nonce, otp } = start.body as { nonce: string; otp: string };
  expect((await call('GET', `${OP}/attempt`)).body).toMatchObject({ started: true, nonce });
  // One attempt at a time, whichever path starts it.
  const second = await call('PUT', `${OP}/attempt`, {});
  expect(second.status).toBe(400);

  // Cancelled at the bare path: 204, and the attempt is gone everywhere.
  expect((await call('DELETE', OP)).status).toBe(204);
  expect((await call('GET', `${OP}/attempt`)).body).toMatchObject({ started: false });

  // A whole generation through the bare path and .../update makes a working DR operation token.
  const again = await call('PUT', OP, {});
  expect(again.status).toBe(200);
  let last: Record<string, unknown> = {};
  for (const key of p.unsealKeys.slice(0, 2)) {
    const r = await call('POST', `${OP}/update`, { key, nonce: again.body.nonce });
    expect(r.status).toBe(200);
    last = r.body;
  }
  expect(last['complete']).toBe(true);
  const token = decodeOtp(last['encoded_token'] as string, again.body.otp as string);
  expect(token).toMatch(/^hvs\.[0-9A-Za-z]{24}$/);
  expect(nonce).not.toBe(again.body.nonce);
  expect(otp).not.toBe(again.body.otp);
  const check = await call('POST', `${DR}/secondary/merkle-check`, { dr_operation_token: token });
  expect(check.status).toBe(200);
});

test('the bare path refuses bad input with a 400 and on a node that is not a DR secondary', async () => {
  const [p, s] = await pair();
  const bad = await s.call('POST', OP, { otp: 'short' }, { token: null });
  expect(bad.status).toBe(400);
  expect(bad.body.errors).toEqual([expect.stringMatching(/otp/i)]);
  expect((await s.call('GET', OP, undefined, { token: null })).body).toMatchObject({ started: false });
  const onPrimary = await p.call('GET', OP);
  expect(onPrimary.status).toBe(400);
  expect(onPrimary.body.errors[0]).toMatch(/not a DR secondary/);
});
