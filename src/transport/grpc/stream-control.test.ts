/** Flow control, revocation and shutdown of open WAL streams, over real gRPC. */
import type { PrimaryClient, ReplicationServer, StreamMessage, StreamSink } from '../../replication/transport.js';
import { ChannelError, connectPrimary, serveReplication } from './index.js';
import { FakePrimary, eventually, gate, makePki, type Pki } from './testing/fixtures.js';

let pki: Pki;
let fake: FakePrimary;
let server: ReplicationServer;
const clients: PrimaryClient[] = [];
const guard = { index: 0n, hash: Buffer.alloc(32) };
const beat = (n: number): StreamMessage => ({ type: 'heartbeat', lastWal: BigInt(n), lastCommitTimeMs: n, sentAtMs: n });

beforeAll(async () => {
  pki = await makePki(['s1', 's2']);
});

beforeEach(async () => {
  fake = new FakePrimary();
  server = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service: fake, closeGraceMs: 500 });
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await server.close();
});

function connect(id: string): PrimaryClient {
  const client = connectPrimary({ address: server.address, tls: pki.clientTls(id) });
  clients.push(client);
  return client;
}

/** Opens a stream and records what arrives and how it ends. */
function follow(id: string, onMessage: (m: StreamMessage) => Promise<void> | void = () => {}) {
  const got: StreamMessage[] = [];
  let end: { error: Error | undefined } | undefined;
  const ended = new Promise<Error | undefined>((resolve) => {
    connect(id).streamWal({ secondaryId: id, guard, maxBatchEntries: 1 }, {
      onMessage: async (m) => {
        got.push(m);
        await onMessage(m);
      },
      onEnd: (error) => {
        end = { error };
        resolve(error);
      },
    });
  });
  return { got, ended, endedYet: () => end !== undefined };
}

/** Sends heartbeats every few ms until the sink closes. */
function beatUntilClosed(sink: StreamSink): void {
  void (async () => {
    for (let n = 1; !sink.closed; n++) {
      await sink.send(beat(n)).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
}

it('a slow consumer makes the sink wait, and every batch still arrives in order', async () => {
  const total = 400;
  const value = Buffer.alloc(64 * 1024, 7);
  let accepted = 0;
  let waitingSince: number | undefined;
  let done = false;
  fake.onStream = (_p, _r, sink) => {
    void (async () => {
      for (let i = 1; i <= total; i++) {
        const send = sink.send({
          type: 'batch',
          entries: [{ index: BigInt(i), epoch: 1, time: i, ops: [{ type: 'put', key: `k${i}`, value }], hash: Buffer.alloc(32) }],
          primaryLastWal: BigInt(total),
          primaryCommitTimeMs: i,
        });
        waitingSince = Date.now();
        await send;
        waitingSince = undefined;
        accepted = i;
      }
      done = true;
      sink.end();
    })();
  };
  const consumer = gate();
  const stream = follow('s1', () => consumer.promise);

  // A send that the transport takes at once resolves within the same macrotask, so a poll can
  // only ever see one pending if it is waiting for the peer: the consumer holds message 1.
  // On a loaded machine message 1 may still be on its way when the wait passes 100 ms: the
  // consumer holding exactly one message is part of the condition, not a separate instant.
  await eventually(() => {
    expect(waitingSince).toBeDefined();
    expect(Date.now() - (waitingSince ?? Infinity)).toBeGreaterThanOrEqual(100);
    expect(stream.got).toHaveLength(1);
  });
  expect(accepted).toBeLessThan(total);
  expect(done).toBe(false);

  consumer.open();
  expect(await stream.ended).toBeUndefined();
  expect(done).toBe(true);
  expect(stream.got.map((m) => (m.type === 'batch' ? m.entries[0]?.index : -1n))).toEqual(
    Array.from({ length: total }, (_, i) => BigInt(i + 1)),
  );
});

it('disconnect(id) ends that peer’s stream at once; another peer’s stream continues', async () => {
  fake.onStream = (_p, _r, sink) => beatUntilClosed(sink);
  const s1 = follow('s1');
  const s2 = follow('s2');
  await eventually(() => expect(Math.min(s1.got.length, s2.got.length)).toBeGreaterThan(2));
  let s1SinkClosed = false;
  fake.sinks.get('s1')?.onClose(() => (s1SinkClosed = true));

  const started = Date.now();
  server.disconnect('s1');
  expect(fake.sinks.get('s1')?.closed).toBe(true);
  const error = await s1.ended;
  expect(Date.now() - started).toBeLessThan(500);
  expect(error).toBeInstanceOf(ChannelError);
  expect([(error as ChannelError).reason, error?.message]).toEqual(['permission_denied', 'secondary revoked']);
  expect(s1SinkClosed).toBe(true);

  const s2Before = s2.got.length;
  await eventually(() => expect(s2.got.length).toBeGreaterThan(s2Before + 3));
  expect(s2.endedYet()).toBe(false);
  expect(fake.sinks.get('s2')?.closed).toBe(false);
});

it('disconnect(id) also answers that peer’s pending unary calls', async () => {
  fake.onOpenSnapshot = () => new Promise(() => {});
  const pending = connect('s1').openSnapshot('s1');
  await eventually(() => expect(fake.methods()).toEqual(['openSnapshot']));
  server.disconnect('s1');
  const e = await pending.catch((err: unknown) => err);
  expect(e).toBeInstanceOf(ChannelError);
  expect((e as ChannelError).reason).toBe('permission_denied');
});

it('closing the client ends its stream, which closes the sink; send then rejects', async () => {
  fake.onStream = (_p, _r, sink) => beatUntilClosed(sink);
  const client = connect('s1');
  const got: StreamMessage[] = [];
  const ended = new Promise<Error | undefined>((resolve) => {
    client.streamWal({ secondaryId: 's1', guard, maxBatchEntries: 1 }, { onMessage: (m) => void got.push(m), onEnd: resolve });
  });
  await eventually(() => expect(got.length).toBeGreaterThan(0));
  const sink = fake.sinks.get('s1');
  const sinkClosed = new Promise<void>((resolve) => sink?.onClose(resolve));
  const started = Date.now();
  client.close();
  expect(await ended).toBeUndefined();
  await sinkClosed;
  expect(Date.now() - started).toBeLessThan(500);
  await expect(sink?.send(beat(0))).rejects.toMatchObject({ code: 'unavailable' });
});

it('closing the server ends open streams with unavailable and refuses new calls', async () => {
  fake.onStream = (_p, _r, sink) => beatUntilClosed(sink);
  const s1 = follow('s1');
  const s2 = follow('s2');
  await eventually(() => expect(Math.min(s1.got.length, s2.got.length)).toBeGreaterThan(0));

  const started = Date.now();
  await Promise.all([server.close(), server.close()]);
  expect(Date.now() - started).toBeLessThan(1_000);
  for (const stream of [s1, s2]) {
    const error = await stream.ended;
    expect(error).toBeInstanceOf(ChannelError);
    expect((error as ChannelError).reason).toBe('unavailable');
  }
  expect(fake.sinks.get('s1')?.closed).toBe(true);
  expect(fake.sinks.get('s2')?.closed).toBe(true);
  const late = await connect('s1').ping('s1', 1_000).catch((e: unknown) => e);
  expect((late as ChannelError).reason).toBe('unavailable');
});
