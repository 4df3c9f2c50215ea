/**
 * Test support, not used by production code: a tiny node:http server that records every request
 * and answers from routes the test declares, in WIRE.md shapes. Unknown paths answer 404.
 *
 *   const fake = await FakeVault.start();
 *   fake.on('GET', 'secret/foo', { status: 200, body: envelope({ a: '1' }) });
 *   ...; expect(fake.requests[0]?.headers['x-vault-token']).toBe('t');
 *   await fake.close();
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  /** Without "/v1/" and without the query, percent-decoded. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: IncomingHttpHeaders;
  /** Parsed JSON body, or undefined when there was none. */
  readonly body: unknown;
}

export interface FakeReply {
  readonly status: number;
  /** Serialised as JSON; omitted for undefined (use it for 204). */
  readonly body?: unknown;
}

export type FakeRoute = (req: RecordedRequest) => FakeReply | Promise<FakeReply>;

/** The WIRE.md success envelope around `data`. */
export function envelope(data: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    request_id: '00000000-0000-0000-0000-000000000000',
    lease_id: '',
    renewable: false,
    lease_duration: 0,
    data,
    wrap_info: null,
    warnings: null,
    auth: null,
    mount_type: '',
    ...extra,
  };
}

export class FakeVault {
  readonly requests: RecordedRequest[] = [];
  readonly #routes = new Map<string, FakeRoute>();
  readonly #server: Server;
  readonly addr: string;

  private constructor(server: Server, addr: string) {
    this.#server = server;
    this.addr = addr;
  }

  static async start(): Promise<FakeVault> {
    let fake: FakeVault | undefined;
    const server = createServer((req, res) => {
      void fake?.handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    fake = new FakeVault(server, `http://127.0.0.1:${port}`);
    return fake;
  }

  /** Declares the answer for a method and path ("LIST" matches GET ?list=true). */
  on(method: string, path: string, reply: FakeReply | FakeRoute): this {
    const route = typeof reply === 'function' ? reply : () => reply;
    this.#routes.set(`${method.toUpperCase()} ${path}`, route);
    return this;
  }

  /** Requests to one path, in arrival order. */
  requestsTo(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve, reject) => this.#server.close((e) => (e ? reject(e) : resolve())));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = decodeURIComponent(url.pathname.replace(/^\/v1\//, ''));
    const query = Object.fromEntries(url.searchParams.entries());
    const method = req.method === 'GET' && query['list'] === 'true' ? 'LIST' : (req.method ?? 'GET');
    const recorded: RecordedRequest = {
      method,
      path,
      query,
      headers: req.headers,
      body: text === '' ? undefined : (JSON.parse(text) as unknown),
    };
    this.requests.push(recorded);

    const route = this.#routes.get(`${method} ${path}`);
    const reply = route
      ? await route(recorded)
      : { status: 404, body: { errors: [`no handler for route "${path}"`] } };
    if (reply.body === undefined) {
      res.writeHead(reply.status).end();
      return;
    }
    res.writeHead(reply.status, { 'Content-Type': 'application/json' }).end(JSON.stringify(reply.body));
  }
}
