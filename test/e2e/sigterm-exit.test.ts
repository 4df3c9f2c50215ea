/**
 * SIGTERM ends the `server` process promptly while DNS does not answer: a primary whose cluster
 * listener is named by host, and its DR secondary reconnecting by that name once it is gone,
 * each exit with code 0 within 3 s of the signal. In containers (docker-compose.yml) the cluster
 * addresses are service names, and a stopped service's name, or a TXT query for any name, goes to
 * a DNS server that may never answer: `docker-compose restart` waited 20 s and more for such
 * queries until neither gRPC end asked DNS for the service config it never uses.
 *
 * "DNS does not answer" here: the secondary's preload points Node's resolver (c-ares, which
 * serves dns.resolve*) at a UDP socket of this test that reads queries and never replies. The
 * operating system's resolver (dns.lookup, /etc/hosts) is left alone, so `localhost` resolves.
 */
import { createSocket, type Socket } from 'node:dgram';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { activateSecondary, enablePrimary, eventually, freePort, replStatus, secondaryToken, useHarness, waitStreaming, type NodeProcess } from '../harness/index.js';

const h = useHarness();

async function silentDns(): Promise<{ socket: Socket; port: number; queries: () => number }> {
  const socket = createSocket('udp4');
  let queries = 0;
  socket.on('message', () => queries++);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  h.onCleanup(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return { socket, port: socket.address().port, queries: () => queries };
}

/** SIGTERM, then polls (no sleep) until the process is gone: within 3 s, with code 0 and a clean stop logged. */
async function exitsPromptly(node: NodeProcess, name: string): Promise<void> {
  const signalled = Date.now();
  node.proc.kill('SIGTERM');
  await eventually(() => {
    if (node.running()) throw new Error(`the ${name} still runs ${Date.now() - signalled} ms after SIGTERM`);
  }, { timeoutMs: 3_000, intervalMs: 25 });
  expect(await node.exited).toEqual({ code: 0, signal: null });
  expect(node.stderrLines.some((l) => l.includes('"node stopped"'))).toBe(true);
}

test('SIGTERM ends a primary and then its DR secondary, which dials it by host name, within 3 s with code 0 while DNS does not answer', async () => {
  const dns = await silentDns();
  const dir = await h.tempDir('tessera-sigterm-');
  const preload = join(dir, 'silent-dns.cjs');
  await writeFile(preload, `require('node:dns').setServers(['127.0.0.1:${dns.port}']);\n`);
  const nodeArgs = ['--require', preload];

  // Named by host, as compose services are: the primary's cluster listener and what secondaries dial.
  const clusterAddr = `localhost:${await freePort()}`;
  const primary = await h.startNode({ init: true, clusterAddr, nodeArgs });
  await enablePrimary(primary.apiAddr, primary.rootToken!, clusterAddr);
  const secondary = await h.startNode({ init: true, nodeArgs });
  await activateSecondary(secondary.apiAddr, secondary.rootToken!, await secondaryToken(primary.apiAddr, primary.rootToken!, 'east'));
  await waitStreaming(secondary.apiAddr, { timeoutMs: 30_000 });

  await exitsPromptly(primary, 'primary');
  // The secondary now reconnects to a primary that is gone, resolving its name each time.
  await eventually(async () => {
    if ((await replStatus(secondary.apiAddr, 'dr')).state === 'stream-wals') throw new Error('the secondary still streams from the stopped primary');
  }, { timeoutMs: 15_000 });
  await exitsPromptly(secondary, 'DR secondary');
  // Nothing went to the resolver no one can cancel: neither end asks it for a gRPC service config.
  expect(dns.queries()).toBe(0);
}, 90_000);
