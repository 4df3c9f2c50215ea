/** The listener's wire forms (as express wrote them before) and the LIST method, over a real socket. */
import http from 'node:http';
import net from 'node:net';
import { pino } from 'pino';
import { z } from 'zod';
import { InvalidRequest } from '../core/errors.js';
import { bare, noContent, ok, streamed } from './reply.js';
import { op, type Route } from './route.js';
import { startHttp, type HttpServer } from './server.js';
import { publicServices } from './testing/public-services.js';

const services = publicServices;

const any = z.object({}).passthrough();
const routes: Route[] = [
  {
    pattern: 'sys/echo/:name',
    access: 'public',
    operations: {
      update: op(any, async ({ params, fields, req }) => ok({ name: params.name, fields, operation: req.operation }), 'Echo the fields.'),
      list: op(any, async ({ req }) => ok({ keys: [req.operation] }), 'List the operation.'),
    },
  },
  { pattern: 'sys/metrics', access: 'public', operations: { read: op(any, async () => bare(200, 'm 1\n', 'text/plain; version=0.0.4'), 'Answer metrics text.') } },
  { pattern: 'sys/nothing', access: 'public', operations: { delete: op(any, async () => noContent(), 'Answer nothing.') } },
  {
    pattern: 'sys/stream/:n',
    access: 'public',
    operations: {
      read: op(any, async ({ params }) =>
        streamed('text/event-stream', async function* (signal) {
          // n chunks then the end; 'forever' waits for the client to leave and records that it did.
          if (params.n === 'forever') {
            yield 'open\n';
            await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
            streamAborted = true;
            return;
          }
          for (let i = 0; i < Number(params.n); i++) yield `chunk ${i}\n`;
        }),
        'Stream chunks.',
      ),
    },
  },
  {
    pattern: 'sys/fail',
    access: 'public',
    operations: {
      read: op(any, async () => {
        throw new InvalidRequest('no good');
      }, 'Fail.'),
    },
  },
];

let server: HttpServer;
let streamAborted = false;
let agent: http.Agent;

beforeAll(async () => {
  server = await startHttp({ services, routes, address: '127.0.0.1:0', logger: pino({ level: 'silent' }), maxBodyBytes: 1024 });
  agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
});

afterAll(async () => {
  agent.destroy();
  await server.close();
});

function call(method: string, path: string, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.url}/v1/${path}`, { method, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('HTTP listener', () => {
  it('answers JSON as application/json (the exact type Vault sends) with an exact Content-Length', async () => {
    const r = await call('PUT', 'sys/echo/ü', JSON.stringify({ a: 1 }));
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.text));
    const body = JSON.parse(r.text);
    expect(body.data).toEqual({ name: 'ü', fields: { a: 1 }, operation: 'update' });
    expect(body.request_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps a given content type, adding the charset of a text body', async () => {
    const r = await call('GET', 'sys/metrics');
    expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(r.text).toBe('m 1\n');
  });

  it('answers 204 without a body or entity headers, and HEAD without a body', async () => {
    const none = await call('DELETE', 'sys/nothing');
    expect(none.status).toBe(204);
    expect(none.text).toBe('');
    expect(none.headers['content-type']).toBeUndefined();
    const head = await call('HEAD', 'sys/metrics');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it('maps typed errors to statuses with an errors body, including an oversized body', async () => {
    const bad = await call('GET', 'sys/fail');
    expect(bad.status).toBe(400);
    expect(bad.headers['content-type']).toBe('application/json');
    expect(JSON.parse(bad.text)).toEqual({ errors: ['no good'] });
    const big = await call('PUT', 'sys/echo/x', JSON.stringify({ v: 'x'.repeat(2000) }));
    expect(big.status).toBe(413);
    expect((await call('PUT', 'sys/echo/after', '{}')).status).toBe(200);
  });

  it('serves the LIST method on a keep-alive connection between other requests', async () => {
    expect((await call('PUT', 'sys/echo/a', '{}')).status).toBe(200);
    const listed = await call('LIST', 'sys/echo/a');
    expect(listed.status).toBe(200);
    expect(JSON.parse(listed.text).data).toEqual({ keys: ['list'] });
    expect(JSON.parse((await call('PUT', 'sys/echo/b', '{}')).text).data.operation).toBe('update');
  });

  it('never lets a client set the LIST marker header itself: not on PUT, not on GET, not next to a real LIST', async () => {
    const forged = (method: string, value: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const req = http.request(`${server.url}/v1/sys/echo/f`, { method, agent, headers: { 'X-Tessera-Method': value } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        });
        req.on('error', reject);
        req.end(method === 'GET' ? undefined : '{}');
      });
    expect(JSON.parse(await forged('PUT', 'LIST')).data.operation).toBe('update');
    expect(JSON.parse(await forged('GET', 'LIST')).errors).toBeDefined(); // a read, which the route does not serve
    expect(JSON.parse(await forged('LIST', 'nonsense')).data).toEqual({ keys: ['list'] });
  });

  it('writes a streamed reply chunk by chunk without a length, and ends it when the source ends', async () => {
    const r = await call('GET', 'sys/stream/3');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/event-stream');
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.headers['cache-control']).toBe('no-cache');
    expect(r.text).toBe('chunk 0\nchunk 1\nchunk 2\n');
    // The keep-alive connection is usable again after it.
    expect((await call('PUT', 'sys/echo/after-stream', '{}')).status).toBe(200);
  });

  it('aborts a streamed reply\'s source when the client goes away', async () => {
    streamAborted = false;
    await new Promise<void>((resolve, reject) => {
      const req = http.request(`${server.url}/v1/sys/stream/forever`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', reject);
      req.end();
    });
    const deadline = Date.now() + 5_000;
    while (!streamAborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(streamAborted).toBe(true);
  });

  it('answers a TLS ClientHello on its plain port with 400 and closes, instead of waiting', async () => {
    const { port } = new URL(server.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(Number(port), '127.0.0.1', () => {
        // The first bytes of a TLS 1.2 ClientHello record: handshake (0x16), version 3.1.
        sock.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03]));
      });
      const chunks: Buffer[] = [];
      sock.on('data', (c: Buffer) => chunks.push(c));
      sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
      sock.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
  });
});

describe('the moment of an answer', () => {
  // A handler schedules work for the event loop's check phase (where Node flushes HTTP/2, so a
  // commit's replication push goes out there): a write's answer comes after it, a read's before.
  const order: string[] = [];
  const mark = (what: string) => async () => {
    setImmediate(() => order.push(`${what}: check phase`));
    return ok({});
  };
  let s: HttpServer;
  beforeAll(async () => {
    const timed: Route[] = [{ pattern: 'sys/order', access: 'public', operations: { read: op(any, mark('read'), 'Read.'), update: op(any, mark('write'), 'Write.') } }];
    s = await startHttp({ services, routes: timed, address: '127.0.0.1:0', logger: pino({ level: 'silent' }), onRequest: ({ method }) => order.push(`${method === 'GET' ? 'read' : 'write'}: answered`) });
  });
  afterAll(async () => {
    await s.close();
  });

  it('answers a write after the check phase its handler scheduled, a read at once', async () => {
    for (const method of ['PUT', 'GET']) {
      const r = await fetch(`${s.url}/v1/sys/order`, { method, ...(method === 'PUT' ? { body: '{}' } : {}) });
      expect(r.status).toBe(200);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(order).toEqual(['write: check phase', 'write: answered', 'read: answered', 'read: check phase']);
  });
});
