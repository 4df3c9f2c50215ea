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
 *
 * A promoted DR secondary exits as promptly when what its replication loop started cannot be
 * undone: a host-name lookup that never answers (getaddrinfo cannot be cancelled), or a connect
 * to a primary that never completes its handshake (gRPC's close() leaves the socket open). Either
 * kept the process alive after "node stopped" (in docker-compose, past the 30 s grace, after the
 * whole HA primary cluster was killed), until the process ended itself once its node stopped.
 */
import { createSocket, type Socket } from 'node:dgram';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  activateSecondary, DR, drOperationToken, enablePrimary, eventually, freePort, replStatus, secondaryToken, useHarness, vault, waitStreaming, type NodeProcess,
} from '../harness/index.js';

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
    if (!node.running()) return;
    const stopped = node.stderrLines.some((l) => l.includes('"node stopped"'));
    throw new Error(`the ${name} still runs ${Date.now() - signalled} ms after SIGTERM (${stopped ? 'after' : 'before'} "node stopped")`);
  }, { timeoutMs: 3_000, intervalMs: 25 });
  expect(await node.exited).toEqual({ code: 0, signal: null });
  expect(node.stderrLines.some((l) => l.includes('"node stopped"'))).toBe(true);
}

/** The warning of a process that outlived its node's stop and was ended: what was still pending. */
function lingered(node: NodeProcess): string[] | undefined {
  const line = node.stderrLines.find((l) => l.includes('still running after the node stopped'));
  return line === undefined ? undefined : (JSON.parse(line) as { pending: string[] }).pending;
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

/**
 * A preload for the `server` process: once `marker` exists, its lookups of `localhost` (Node's
 * dns.lookup, which gRPC's resolver uses: getaddrinfo on libuv's thread pool) never answer, as
 * the name of a stopped compose service may not when the container's DNS forwards it upstream
 * and nothing replies. Such a request cannot be cancelled and keeps the process alive until
 * getaddrinfo gives up; here a ten-minute timer stands for it. Each one held is logged to stderr.
 */
function stuckLookupPreload(marker: string): string {
  return `const dns = require('node:dns');
const { existsSync } = require('node:fs');
const real = { lookup: dns.lookup, promised: dns.promises.lookup };
let held = 0;
const stuck = (host) => host === 'localhost' && existsSync(${JSON.stringify(marker)});
function hold(host) {
  held++;
  process.stderr.write(JSON.stringify({ msg: 'test preload: a lookup that never answers', host, held }) + '\\n');
  return new Promise((_, reject) => setTimeout(() => reject(Object.assign(new Error('getaddrinfo EAI_AGAIN ' + host), { code: 'EAI_AGAIN' })), 600000));
}
dns.promises.lookup = (host, options) => (stuck(host) ? hold(host) : real.promised.call(dns.promises, host, options));
dns.lookup = (host, options, callback) => {
  if (!stuck(host)) return real.lookup.call(dns, host, options, callback);
  hold(host).catch((e) => (typeof options === 'function' ? options : callback)(e));
  return {};
};
`;
}

test('SIGTERM ends a promoted DR secondary within 3 s with code 0 while its lookups of the lost primary\'s host name never answer', async () => {
  const dir = await h.tempDir('tessera-sigterm-');
  const marker = join(dir, 'primary-gone');
  const preload = join(dir, 'stuck-lookup.cjs');
  await writeFile(preload, stuckLookupPreload(marker));

  const clusterAddr = `localhost:${await freePort()}`;
  const primary = await h.startNode({ init: true, clusterAddr });
  await enablePrimary(primary.apiAddr, primary.rootToken!, clusterAddr);
  const secondary = await h.startNode({ init: true, nodeArgs: ['--require', preload] });
  await activateSecondary(secondary.apiAddr, secondary.rootToken!, await secondaryToken(primary.apiAddr, primary.rootToken!, 'east'));
  await waitStreaming(secondary.apiAddr, { timeoutMs: 30_000 });
  // Caught up before the primary goes: streaming can start before the first entries are applied,
  // and the promote below (without force) refuses a secondary that is behind.
  const last = (await replStatus(primary.apiAddr, 'dr')).last_wal;
  await eventually(async () => expect((await replStatus(secondary.apiAddr, 'dr')).last_wal).toBeGreaterThanOrEqual(last), { timeoutMs: 15_000 });

  // The primary is lost; from now on the secondary's reconnects wait on lookups that never answer.
  await writeFile(marker, '');
  await primary.kill('SIGKILL');
  await eventually(() => {
    if (!secondary.stderrLines.some((l) => l.includes('a lookup that never answers'))) throw new Error('no lookup of the lost primary held yet');
  }, { timeoutMs: 15_000 });

  // Promoted with the primary's shares (the secondary took over its seal): its loop's client is closed, the lookup still held.
  const promote = await vault(secondary.apiAddr).post(`${DR}/secondary/promote`, { dr_operation_token: await drOperationToken(secondary.apiAddr, primary.unsealKeys) });
  if (promote.status !== 204) throw new Error(`promote answered ${promote.status}: ${promote.text}`);
  await eventually(async () => expect((await replStatus(secondary.apiAddr, 'dr')).mode).toBe('primary'), { timeoutMs: 15_000 });
  await exitsPromptly(secondary, 'promoted DR secondary');
  // The process ended itself after its stop: the held lookup (a timer here) was still pending.
  expect(lingered(secondary)).toContain('Timeout');
}, 90_000);

test('SIGTERM ends a promoted DR secondary within 3 s with code 0 while its connect to the lost primary never completes', async () => {
  const primary = await h.startNode({ init: true });
  await enablePrimary(primary.apiAddr, primary.rootToken!);
  const secondary = await h.startNode({ init: true });
  await activateSecondary(secondary.apiAddr, secondary.rootToken!, await secondaryToken(primary.apiAddr, primary.rootToken!, 'east'));
  await waitStreaming(secondary.apiAddr, { timeoutMs: 30_000 });

  // Stopped, the primary's cluster port still completes TCP handshakes in the kernel and answers
  // nothing more: a reconnect's TLS handshake waits, as a connect to a vanished container's
  // address waits for SYN answers. gRPC's close() leaves that socket open.
  process.kill(primary.pid, 'SIGSTOP');
  h.onCleanup(async () => {
    if (primary.running()) process.kill(primary.pid, 'SIGCONT');
  });
  await eventually(async () => {
    const st = await replStatus(secondary.apiAddr, 'dr');
    if (st.state === 'stream-wals' || st.connection_state !== 'connecting') throw new Error(`the secondary is ${st.state}, ${st.connection_state}: not reconnecting yet`);
  }, { timeoutMs: 20_000, intervalMs: 100 });

  const promote = await vault(secondary.apiAddr).post(`${DR}/secondary/promote`, { dr_operation_token: await drOperationToken(secondary.apiAddr, primary.unsealKeys), force: true });
  if (promote.status !== 204) throw new Error(`promote answered ${promote.status}: ${promote.text}`);
  await eventually(async () => expect((await replStatus(secondary.apiAddr, 'dr')).mode).toBe('primary'), { timeoutMs: 15_000 });
  await exitsPromptly(secondary, 'promoted DR secondary');
  // The process ended itself after its stop: the closed client's socket was still open.
  expect(lingered(secondary)).toContain('TCPSocketWrap');
}, 90_000);
