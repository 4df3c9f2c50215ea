/**
 * Issue 6 item 8: header, body and keep-alive idle deadlines on the API listener, over real
 * sockets (every connection passes through the LIST-method framer). Small values through options.
 */
import net from 'node:net';
import { pino } from 'pino';
import { z } from 'zod';
import { ok } from './reply.js';
import { op, type Route } from './route.js';
import { startHttp, type HttpServer } from './server.js';
import { publicServices } from './testing/public-services.js';

const services = publicServices;

const TIMEOUTS = { headersMs: 300, bodyMs: 600, idleMs: 1_500 };
const any = z.object({}).passthrough();
const routes: Route[] = [
  { pattern: 'sys/ok', access: 'public', operations: { read: op(any, async () => ok({ fine: true }), 'Answer at once.'), update: op(any, async () => ok({ fine: true }), 'Answer at once.'), list: op(any, async () => ok({ keys: ['a'] }), 'Answer at once.') } },
  // Slower than every deadline: a request being handled is not the client's delay.
  { pattern: 'sys/slow', access: 'public', operations: { read: op(any, async () => new Promise((r) => setTimeout(() => r(ok({ slow: true })), 1_200)), 'Answer slowly.') } },
];

let server: HttpServer;

beforeAll(async () => {
  server = await startHttp({ services, routes, address: '127.0.0.1:0', logger: pino({ level: 'silent' }), timeouts: TIMEOUTS });
});

afterAll(async () => {
  await server.close();
});

interface Raw {
  readonly socket: net.Socket;
  readonly opened: number;
  /** Milliseconds from opening to the server closing the connection; rejects after `within`. */
  closed(within: number): Promise<number>;
  text(): string;
  /** Resolves once `n` complete HTTP responses (by Content-Length) have arrived. */
  responses(n: number, within: number): Promise<string[]>;
}

async function connect(): Promise<Raw> {
  const socket = net.connect(server.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const opened = Date.now();
  const chunks: Buffer[] = [];
  let closedAt: number | undefined;
  const waiters: Array<() => void> = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  socket.on('data', (c: Buffer) => {
    chunks.push(c);
    wake();
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    closedAt = Date.now();
    wake();
  });
  const text = () => Buffer.concat(chunks).toString('latin1');
  const until = <T>(get: () => T | undefined, within: number, what: string) =>
    new Promise<T>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`${what} not within ${within} ms; got ${JSON.stringify(text().slice(0, 200))}`)), within);
      const check = () => {
        const v = get();
        if (v !== undefined) {
          clearTimeout(deadline);
          resolve(v);
        } else waiters.push(check);
      };
      check();
    });
  const parsed = (): string[] => {
    const out: string[] = [];
    let rest = text();
    for (;;) {
      const end = rest.indexOf('\r\n\r\n');
      if (end < 0) return out;
      const len = Number(/content-length: (\d+)/i.exec(rest.slice(0, end))?.[1] ?? 0);
      if (rest.length < end + 4 + len) return out;
      out.push(rest.slice(0, end + 4 + len));
      rest = rest.slice(end + 4 + len);
    }
  };
  return {
    socket,
    opened,
    text,
    closed: (within) => until(() => (closedAt === undefined ? undefined : closedAt - opened), within, 'close'),
    responses: (n, within) => until(() => (parsed().length >= n ? parsed() : undefined), within, `${n} responses`),
  };
}

/** Writes `data` one byte per `everyMs` until the connection closes (a slowloris). */
function trickle(c: Raw, data: string, everyMs: number): () => void {
  let i = 0;
  const t = setInterval(() => {
    if (c.socket.destroyed || c.socket.writableEnded) return clearInterval(t);
    c.socket.write(data[i % data.length] as string);
    i++;
  }, everyMs);
  return () => clearInterval(t);
}

const GET = (path: string, method = 'GET') => `${method} /v1/${path} HTTP/1.1\r\nHost: t\r\n\r\n`;

describe('API listener deadlines', () => {
  it('closes a connection that never says anything after the header timeout', async () => {
    const c = await connect();
    const ms = await c.closed(3_000);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUTS.headersMs - 50);
    expect(c.text()).toBe('');
  });

  it('closes a slowloris (a head sent a byte at a time, never finished) with a 408', async () => {
    const c = await connect();
    c.socket.write('GET /v1/sys/ok HTTP/1.1\r\nHost: t\r\n');
    const stop = trickle(c, 'X-Slow: aaaaaaaa\r\n', 50);
    const ms = await c.closed(3_000);
    stop();
    expect(ms).toBeLessThan(TIMEOUTS.headersMs + 1_000);
    expect(c.text()).toMatch(/^HTTP\/1.1 408 Request Timeout\r\n/);
  });

  it('closes a slow body after the body timeout with a 408', async () => {
    const c = await connect();
    c.socket.write('PUT /v1/sys/ok HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":"');
    const stop = trickle(c, 'x', 50);
    const ms = await c.closed(4_000);
    stop();
    expect(ms).toBeGreaterThanOrEqual(TIMEOUTS.bodyMs - 50);
    expect(ms).toBeLessThan(TIMEOUTS.bodyMs + 1_500);
    expect(c.text()).toMatch(/^HTTP\/1.1 408 Request Timeout\r\n/);
  });

  it('keeps a keep-alive connection for requests within the idle timeout (LIST included), then closes it quietly', async () => {
    const c = await connect();
    c.socket.write(GET('sys/ok'));
    await c.responses(1, 2_000);
    // Between requests, for less than the idle timeout but more than the header timeout.
    await new Promise((r) => setTimeout(r, TIMEOUTS.headersMs + 50));
    c.socket.write(GET('sys/ok', 'LIST'));
    const [first, second] = await c.responses(2, 2_000);
    expect(first).toMatch(/^HTTP\/1.1 200 /);
    expect(second).toMatch(/^HTTP\/1.1 200 [\s\S]*"keys":\["a"\]/);
    const answeredAt = Date.now() - c.opened;
    const ms = await c.closed(3_000);
    expect(ms - answeredAt).toBeGreaterThanOrEqual(TIMEOUTS.idleMs - 100);
    // Not a 408 status line anywhere (a bare /408/ also matched a request_id such as "...-4087-...").
    expect(c.text()).not.toMatch(/HTTP\/1\.1 408 /);
  });

  it('does not cut a request whose handler takes longer than every deadline', async () => {
    const c = await connect();
    c.socket.write(GET('sys/slow'));
    const [r] = await c.responses(1, 4_000);
    expect(r).toMatch(/^HTTP\/1.1 200 [\s\S]*"slow":true/);
  });
});
