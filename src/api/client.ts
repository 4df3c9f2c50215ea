/**
 * The typed client for a Tessera (or Vault) node. Generic calls return the parsed envelope, or
 * null for a 204; any other non-2xx answer throws `ApiError`.
 *
 *   const client = new TesseraClient({ addr: 'http://127.0.0.1:8200', token: 'hvs.x' });
 *   await client.write('secret/data/app', { data: { user: 'ada' } });
 *   const secret = await client.read('secret/data/app', { version: 2 });
 *   const status = await client.replication.status();
 */
import type { Envelope, Help, Query } from './types.js';
import { MalformedResponse } from './errors.js';
import { Method, buildUrl, send } from './request.js';
import type { ApiRequest, ApiResponse, ConnectionOptions } from './request.js';
import { SysApi } from './sys.js';
import { ReplicationApi } from './replication.js';

export type ClientOptions = ConnectionOptions;

export class TesseraClient {
  readonly sys: SysApi;
  readonly replication: ReplicationApi;
  readonly #options: ClientOptions;

  constructor(options: ClientOptions) {
    this.#options = { ...options };
    const request = (req: ApiRequest): Promise<ApiResponse> => this.request(req);
    this.sys = new SysApi(request);
    this.replication = new ReplicationApi(request);
  }

  get addr(): string {
    return this.#options.addr;
  }
  get token(): string | undefined {
    return this.#options.token;
  }
  get namespace(): string | undefined {
    return this.#options.namespace;
  }

  /** A client like this one with another token (undefined sends none). */
  withToken(token: string | undefined): TesseraClient {
    return new TesseraClient({ ...this.#options, token });
  }

  /** A client like this one with another X-Vault-Wrap-TTL (undefined: answers are not wrapped). */
  withWrapTtl(wrapTtl: string | undefined): TesseraClient {
    return new TesseraClient({ ...this.#options, wrapTtl });
  }

  /** A client like this one in another namespace (undefined means the root namespace). */
  withNamespace(namespace: string | undefined): TesseraClient {
    return new TesseraClient({ ...this.#options, namespace });
  }

  /** The full URL a path maps to, for messages. */
  url(path: string, query?: Query): string {
    return buildUrl(this.#options.addr, path, query);
  }

  /** The raw exchange, for endpoints that answer bare objects or extra statuses. */
  request(req: ApiRequest): Promise<ApiResponse> {
    return send(this.#options, req);
  }

  async read<D = Record<string, unknown>>(path: string, query?: Query): Promise<Envelope<D> | null> {
    return this.#envelope<D>({ method: Method.get, path, query });
  }

  /** POST; `body` defaults to an empty object. */
  async write<D = Record<string, unknown>>(
    path: string,
    body?: Readonly<Record<string, unknown>>,
  ): Promise<Envelope<D> | null> {
    return this.#envelope<D>({ method: Method.post, path, body: body ?? {} });
  }

  /** PATCH with a JSON merge patch (RFC 7396), as KV v2 `data/` and `metadata/` take it. */
  async patch<D = Record<string, unknown>>(path: string, body: Readonly<Record<string, unknown>>): Promise<Envelope<D> | null> {
    return this.#envelope<D>({ method: Method.patch, path, body, contentType: 'application/merge-patch+json' });
  }

  async delete<D = Record<string, unknown>>(path: string): Promise<Envelope<D> | null> {
    return this.#envelope<D>({ method: Method.delete, path });
  }

  /** GET ?list=true; the keys are in `data.keys`. */
  async list(path: string): Promise<Envelope<{ keys: string[] }> | null> {
    return this.#envelope<{ keys: string[] }>({ method: Method.get, path, query: { list: true } });
  }

  /**
   * The help of the route `path` matches (GET ?help=1), as Vault's api `Client.Help` reads it:
   * a bare object, not an envelope. As in Vault, any valid token will do, and the paths that need
   * no token (health, seal status, logins) need none for their help either.
   */
  async help(path: string): Promise<Help> {
    const req: ApiRequest = { method: Method.get, path, query: { help: 1 } };
    const res = await this.request(req);
    const body = res.body as Partial<Help> | null;
    if (body === null || typeof body !== 'object' || Array.isArray(body) || typeof body.help !== 'string') {
      throw new MalformedResponse(this.url(req.path, req.query), res.status, 'expected a help object');
    }
    return { help: body.help, see_also: body.see_also ?? null, openapi: body.openapi ?? null };
  }

  async #envelope<D>(req: ApiRequest): Promise<Envelope<D> | null> {
    const res = await this.request(req);
    if (res.body === null) return null;
    if (typeof res.body !== 'object' || Array.isArray(res.body)) {
      throw new MalformedResponse(this.url(req.path, req.query), res.status, 'expected a JSON object');
    }
    return res.body as Envelope<D>;
  }
}
