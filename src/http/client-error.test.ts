/**
 * A valid request followed on the same socket by bytes Node's parser refuses: the request is
 * executed, so its client must read its real answer, never the parser's 400 in its place.
 */
import net from 'node:net';
import { pino } from 'pino';
import { z } from 'zod';
import { ok } from './reply.js';
import { op, type Route } from './route.js';
import { startHttp, type HttpServer } from './server.js';
import { publicServices } from './testing/public-services.js';

const services = publicServices;

/** Names committed by `sys/commit/:name`, which takes a few turns of the event loop, as a storage commit does. */
const committed: string[] = [];
const routes: Route[] = [
  {
    pattern: 'sys/commit/:name',
    access: 'public',
    operations: {
      update: op(z.object({}).passthrough(), async ({ params }) => {
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
        committed.push(params.name as string);
        return ok({ committed: params.name });
      }, 'Commit after a few turns.'),
    },
  },
];

let server: HttpServer;
beforeAll(async () => {
  server = await startHttp({ services, routes, address: '127.0.0.1:0', logger: pino({ level: 'silent' }) });
});
afterAll(() => server.close());

/** Writes `bytes` in one write and returns everything the server sent until it closed. */
function raw(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(server.port, '127.0.0.1', () => sock.write(Buffer.from(bytes, 'latin1')));
    const chunks: Buffer[] = [];
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    sock.on('error', reject);
  });
}

/** Status lines and bodies of the responses in `text`, in order. */
function responses(text: string): { status: number; body: string }[] {
  const out: { status: number; body: string }[] = [];
  let rest = text;
  while (rest.length > 0) {
    const m = /^HTTP\/1\.[01] (\d{3}) [^\r]*\r\n([\s\S]*?)\r\n\r\n/.exec(rest);
    if (m === null) throw new Error(`not a response: ${JSON.stringify(rest.slice(0, 80))}`);
    const length = Number(/content-length: (\d+)/i.exec(m[2] as string)?.[1] ?? 0);
    const start = m[0].length;
    out.push({ status: Number(m[1]), body: rest.slice(start, start + length) });
    rest = rest.slice(start + length);
  }
  return out;
}

const post = (name: string, version = '1.1'): string => `POST /v1/sys/commit/${name} HTTP/${version}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;

describe('a request followed by bytes the parser refuses', () => {
  it.each([
    ['NUL and garbage', 'garbage', post('garbage') + '\x00garbage'],
    ['an HTTP/9.9 request', 'http99', post('http99') + 'GET /v1/sys/commit/x HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['HTTP/1.0 pipelining', 'http10', post('http10', '1.0') + post('second', '1.0')],
  ])('with %s: the executed request gets its own answer first, then at most the 400 for the rest', async (_label, name, bytes) => {
    const got = responses(await raw(bytes));
    expect(committed).toContain(name);
    expect(got[0]).toEqual({ status: 200, body: expect.stringContaining(`"committed":"${name}"`) });
    for (const later of got.slice(1)) expect(later).toEqual({ status: 400, body: '{"errors":["malformed HTTP request: bad request"]}' });
    expect(got.length).toBeLessThanOrEqual(2);
    expect(committed).not.toContain('second');
  });

  it('still answers garbage alone with the 400 at once', async () => {
    expect(responses(await raw('\x00garbage'))).toEqual([{ status: 400, body: '{"errors":["malformed HTTP request: bad request"]}' }]);
  });
});
