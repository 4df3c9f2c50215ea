/**
 * A primary that stops answering without closing its connection (a partition, a frozen host) is
 * noticed by the client's keepalive within a few seconds. A TCP relay in the middle plays the
 * partition: it stops forwarding in both directions but keeps both sockets open.
 */
import { connect as tcpConnect, createServer, type Server, type Socket } from 'node:net';
import type { ReplicationServer } from '../../replication/transport.js';
import { ChannelError, connectPrimary, serveReplication } from './index.js';
import { FakePrimary, eventually, makePki } from './testing/fixtures.js';

interface Relay {
  readonly address: string;
  partition(): void;
  close(): Promise<void>;
}

async function relayTo(target: string): Promise<Relay> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const pairs: [Socket, Socket][] = [];
  const server: Server = createServer((down) => {
    const up = tcpConnect(port, host);
    down.pipe(up);
    up.pipe(down);
    down.on('error', () => up.destroy());
    up.on('error', () => down.destroy());
    pairs.push([down, up]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as { port: number }).port}`,
    partition() {
      for (const [down, up] of pairs) {
        down.unpipe(up);
        up.unpipe(down);
        down.pause();
        up.pause();
      }
    },
    async close() {
      for (const [down, up] of pairs) {
        down.destroy();
        up.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let server: ReplicationServer;
let relay: Relay;

afterEach(async () => {
  await relay.close();
  await server.close();
});

it('a silent primary ends the open WAL stream with unavailable within a few seconds', async () => {
  const pki = await makePki(['s1']);
  const fake = new FakePrimary();
  fake.onStream = (_p, _r, sink) => void sink.send({ type: 'start', outcome: 'ok', firstRetained: 1n, lastWal: 1n });
  server = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service: fake });
  relay = await relayTo(server.address);
  const client = connectPrimary({ address: relay.address, tls: pki.clientTls('s1') });

  let started = false;
  const ended = new Promise<Error | undefined>((resolve) => {
    client.streamWal({ secondaryId: 's1', guard: { index: 1n, hash: Buffer.alloc(32) }, maxBatchEntries: 1 }, {
      onMessage: () => void (started = true),
      onEnd: resolve,
    });
  });
  await eventually(() => expect(started).toBe(true));

  const cut = Date.now();
  relay.partition();
  const error = await ended;
  const noticedAfter = Date.now() - cut;
  expect(error).toBeInstanceOf(ChannelError);
  expect((error as ChannelError).reason).toBe('unavailable');
  expect(noticedAfter).toBeLessThan(7_000);
  expect(client.connectionState()).not.toBe('ready');
  client.close();
}, 15_000);
