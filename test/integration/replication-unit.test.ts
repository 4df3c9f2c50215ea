/**
 * Replication stops and starts as a unit while the node stays up (what a node stepping down and
 * becoming active again needs): stopping the primary's unit closes its cluster port, its DR
 * secondary disconnects and forwarding refuses (503); starting it again serves the same port, the
 * pair streams again, and a write made meanwhile and one made after reach the secondary. Twice.
 * A stopped performance secondary answers a write it would forward with 503 and writes nothing.
 * In-process nodes over real gRPC/mTLS on 127.0.0.1.
 */
import { connect } from 'node:net';
import { ErrorCode } from '../../src/core/errors.js';
import { freePort } from '../harness/dr.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { drStatus as status, inSync } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

/** Whether a TCP connection to 127.0.0.1:`port` is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

const forwardRequest = { requestId: 'r-1', method: 'PUT', operation: 'update', namespace: '', path: 'secret/data/x', trailingSlash: false, query: {}, body: {} };

describe('the replication unit: stop and start while the node runs', () => {
  let p: TestNode;
  let s: TestNode;
  afterEach(async () => {
    await s?.stop();
    await p?.stop();
  });

  it('closes the cluster port and disconnects the DR secondary on stop; streams again on start (twice)', async () => {
    const port = await freePort();
    p = await startTestNode({ clusterAddr: `127.0.0.1:${port}` });
    s = await startTestNode();
    await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    await joinSecondary(p, s, 'dr-east');
    expect(await refused(port)).toBe(false);

    for (const round of [1, 2]) {
      await p.node.replication.stop();
      expect(await refused(port)).toBe(true);
      await eventually(async () => expect((await status(s)).connection_state).not.toBe('ready'), { timeoutMs: 20_000 });
      await expect(p.node.replication.requests.forwardWrite(forwardRequest)).rejects.toMatchObject({ code: ErrorCode.unavailable });
      // The node still serves its clients, and still says what it is.
      expect((await p.call('PUT', `secret/data/while-stopped-${round}`, { data: { round } })).status).toBe(200);
      expect((await p.call('GET', 'sys/health')).body.replication_dr_mode).toBe('primary');

      await p.node.replication.start();
      expect(await refused(port)).toBe(false);
      await inSync(p, s, { streaming: true });
      await p.call('PUT', `secret/data/after-start-${round}`, { data: { round } });
      const synced = await inSync(p, s, { streaming: true });
      expect(synced).toMatchObject({ mode: 'secondary', connection_state: 'ready', state: 'stream-wals' });
    }
  });

  it('a stopped performance secondary refuses to forward writes (503, nothing written); started, it forwards again', async () => {
    p = await startTestNode();
    s = await startTestNode();
    await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    await joinSecondary(p, s, 'perf-east', 'performance');

    await s.node.replication.stop();
    const refusedWrite = await s.call('PUT', 'secret/data/fwd', { data: { v: 1 } });
    expect(refusedWrite.status).toBe(503);
    expect(refusedWrite.body.errors[0]).toMatch(/replication is stopped on this node.*nothing was written/);
    expect((await p.call('GET', 'secret/data/fwd')).status).toBe(404);

    await s.node.replication.start();
    await inSync(p, s, { kind: 'performance' });
    await eventually(async () => expect((await s.call('PUT', 'secret/data/fwd', { data: { v: 2 } })).status).toBe(200), { timeoutMs: 15_000 });
    expect((await p.call('GET', 'secret/data/fwd')).body.data.data).toEqual({ v: 2 });
  });
});
