/**
 * The standby relay while the active node goes away (real gRPC client, real TCP): a request held
 * on a connection that never becomes ready (the old active node stopped answering) is answered by
 * this node as soon as this node takes over, not when the connection attempt times out.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { connectHa } from '../transport/grpc/index.js';
import { makePki } from '../transport/grpc/testing/fixtures.js';
import { HA_SERVER_NAME } from './tls.js';
import { StandbyRelay } from './standby.js';

const request = { method: 'PUT', url: '/v1/secret/data/x', headers: {}, body: Buffer.from('{}'), remoteAddress: '127.0.0.1' };

let silent: Server;
const sockets: Socket[] = [];
let address: string;
beforeAll(async () => {
  // Accepts connections and never answers: the TLS handshake of a relay to it never completes.
  silent = createServer((s) => sockets.push(s));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  address = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

it('answers itself as soon as this node takes over, while the relay to the old active node is not yet sent', async () => {
  const pki = await makePki(['standby'], 'cluster-1', HA_SERVER_NAME);
  let active = false;
  const relay = new StandbyRelay({
    relayTarget: () => (active ? undefined : { leader: { apiAddr: 'http://127.0.0.1:1', clusterAddr: address } }),
    // The lock row names this node once it took over: no other node to go to.
    findLeader: async () => (active ? undefined : { apiAddr: 'http://127.0.0.1:1', clusterAddr: address }),
    waitForLeaderMs: 3_000,
    loadTls: async () => ({ server: pki.serverTls, client: pki.clientTls('standby') }),
    connect: (o) => connectHa(o),
    verifiedApiAddr: async () => undefined,
    servesReads: () => false,
    current: async () => undefined,
  });
  try {
    const started = Date.now();
    const answer = relay.divert(request, () => false);
    setTimeout(() => (active = true), 300);
    // undefined: this node runs the request itself.
    await expect(answer).resolves.toBeUndefined();
    // The relay's connection would have given up at 2 s; the watch (every 100 ms) ends it first.
    expect(Date.now() - started).toBeLessThan(1_500);
  } finally {
    relay.close();
  }
});
