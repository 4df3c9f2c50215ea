/**
 * proto/ha.proto on gRPC: the active node serves HaForward on the cluster port (registered on the
 * cluster server beside the replication kinds, under its own SNI name and CA), and a standby's
 * client relays a request to it.
 *
 *   await cluster.serveHa({ tls: haServerTls, handlers: { forward: (req) => http.execute(req) } });
 *   const client = connectHa({ address: leader.clusterAddr, tls: haClientTls });
 *   const reply = await client.forward(raw, 30_000);    // rejects with ChannelError
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { LeaseDown, LeaseUp } from '../../core/ha/read-lease.js';
import { ChannelError, ChannelReason } from '../../replication/index.js';
import type { TlsMaterial } from '../../replication/index.js';
import { MAX_MESSAGE_BYTES, type Unary } from './proto.js';
import { channelErrorOf } from './status.js';

const PROTO_PATH = fileURLToPath(new URL('../../../proto/ha.proto', import.meta.url));
const SERVICE_NAME = 'tessera.ha.v1.HaForward';

export interface HaHttpRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | undefined;
  readonly remoteAddress: string;
}

export interface HaHttpReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

interface WireHeader {
  name: string;
  value: string;
}
interface WireRequest {
  method: string;
  url: string;
  headers: WireHeader[];
  body: Buffer;
  remoteAddr: string;
}
interface WireResponse {
  status: number;
  headers: WireHeader[];
  body: Buffer;
}

interface WireLeaseUp {
  kind?: 'ask' | 'ack' | 'revoked';
  ask?: string | number;
  ack?: string | number;
  revoked?: boolean;
}
interface WireLeaseDown {
  kind?: 'grant' | 'push' | 'revoke';
  grant?: { ask: string | number; durationMs: number; seq: string | number } | null;
  push?: { seq: string | number; wal?: { first: string | number; last: string | number; records: Buffer[] } | null } | null;
  revoke?: boolean;
}

interface HaRawClient extends grpc.Client {
  Forward: Unary<WireRequest, WireResponse>;
  ReadLease(): grpc.ClientDuplexStream<WireLeaseUp, WireLeaseDown>;
}

/** A read-lease stream, either end (src/ha/read-lease-server.ts and read-lease-client.ts). */
export interface LeaseDuplex<In, Out> {
  send(m: Out): void;
  onMessage(fn: (m: In) => void): void;
  /** Once, when the stream ended, failed or was cancelled. */
  onEnd(fn: (why: string) => void): void;
  end(): void;
  close(): void;
}

export const leaseWire = {
  up: (m: LeaseUp): WireLeaseUp => (m.type === 'ask' ? { ask: m.ask } : m.type === 'ack' ? { ack: m.seq } : { revoked: true }),
  fromUp: (w: WireLeaseUp): LeaseUp | undefined =>
    w.kind === 'ask' ? { type: 'ask', ask: Number(w.ask) } : w.kind === 'ack' ? { type: 'ack', seq: Number(w.ack) } : w.kind === 'revoked' ? { type: 'revoked' } : undefined,
  down: (m: LeaseDown): WireLeaseDown =>
    m.type === 'grant'
      ? { grant: { ask: m.ask, durationMs: m.durationMs, seq: m.seq } }
      : m.type === 'push'
        ? { push: { seq: m.seq, ...(m.wal !== undefined ? { wal: { first: m.wal.first.toString(), last: m.wal.last.toString(), records: [...m.wal.records] } } : {}) } }
        : { revoke: true },
  fromDown: (w: WireLeaseDown): LeaseDown | undefined =>
    w.kind === 'grant' && w.grant
      ? { type: 'grant', ask: Number(w.grant.ask), durationMs: w.grant.durationMs, seq: Number(w.grant.seq) }
      : w.kind === 'push' && w.push
        ? { type: 'push', seq: Number(w.push.seq), ...(w.push.wal ? { wal: { first: BigInt(w.push.wal.first), last: BigInt(w.push.wal.last), records: w.push.wal.records.map((r) => Buffer.from(r)) } } : {}) }
        : w.kind === 'revoke'
          ? { type: 'revoke' }
          : undefined,
};

/** Either end of a gRPC duplex call as a LeaseDuplex; messages of no known kind are dropped. */
export function leaseDuplex<In, Out, WIn, WOut>(
  call: grpc.ClientDuplexStream<WOut, WIn> | grpc.ServerDuplexStream<WIn, WOut>,
  fromWire: (w: WIn) => In | undefined,
  toWire: (m: Out) => WOut,
): LeaseDuplex<In, Out> {
  let ended = false;
  const enders: Array<(why: string) => void> = [];
  const finish = (why: string): void => {
    if (ended) return;
    ended = true;
    for (const f of enders) f(why);
  };
  call.on('error', (e: Error) => finish(e.message));
  call.on('end', () => finish('ended'));
  call.on('close', () => finish('closed'));
  call.on('cancelled', () => finish('cancelled'));
  const stop = (): void => {
    if ('cancel' in call) call.cancel();
    else call.end();
  };
  return {
    send(m) {
      if (!ended) call.write(toWire(m));
    },
    onMessage(fn) {
      call.on('data', (w: WIn) => {
        const m = fromWire(w);
        if (m !== undefined) fn(m);
      });
    },
    onEnd(fn) {
      if (ended) fn('ended');
      else enders.push(fn);
    },
    end: stop,
    close: stop,
  };
}

export function loadHa(): { definition: grpc.ServiceDefinition; Client: grpc.ServiceClientConstructor } {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, { longs: String, enums: String, defaults: true, oneofs: true }));
  const Client = SERVICE_NAME.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], pkg) as
    | grpc.ServiceClientConstructor
    | undefined;
  if (typeof Client !== 'function') throw new Error(`${PROTO_PATH} does not define ${SERVICE_NAME}`);
  return { definition: Client.service, Client };
}

const headerList = (h: Readonly<Record<string, string>>): WireHeader[] => Object.entries(h).map(([name, value]) => ({ name, value }));
const headerMap = (h: readonly WireHeader[]): Record<string, string> => Object.fromEntries(h.map((x) => [x.name.toLowerCase(), x.value]));

export const haWire = {
  request: (r: HaHttpRequest): WireRequest => ({ method: r.method, url: r.url, headers: headerList(r.headers), body: r.body ?? Buffer.alloc(0), remoteAddr: r.remoteAddress }),
  fromRequest: (w: WireRequest): HaHttpRequest => ({
    method: w.method,
    url: w.url,
    headers: headerMap(w.headers),
    body: w.body.length === 0 ? undefined : Buffer.from(w.body),
    remoteAddress: w.remoteAddr,
  }),
  reply: (r: HaHttpReply): WireResponse => ({ status: r.status, headers: headerList(r.headers), body: r.body }),
  fromReply: (w: WireResponse): HaHttpReply => ({ status: w.status, headers: headerMap(w.headers), body: Buffer.from(w.body) }),
};

export interface HaClient {
  /**
   * Rejects with ChannelError: `not_sent` when the request never left this node. `signal` cancels
   * a call in flight (it then rejects as cancelled: the outcome is unknown).
   */
  forward(req: HaHttpRequest, deadlineMs: number, signal?: AbortSignal): Promise<HaHttpReply>;
  /** A read-lease stream to the active node (fails by ending when the node is not reachable). */
  readLease(): LeaseDuplex<LeaseDown, LeaseUp>;
  close(): void;
}

/** Waits at most this long for a connection before a request counts as not sent. */
const READY_MS = 2_000;

export function connectHa(opts: { address: string; tls: TlsMaterial }): HaClient {
  const { Client } = loadHa();
  const credentials = grpc.credentials.createSsl(Buffer.from(opts.tls.caPem), Buffer.from(opts.tls.keyPem), Buffer.from(opts.tls.certPem));
  const raw = new Client(opts.address, credentials, {
    'grpc.ssl_target_name_override': opts.tls.serverName,
    'grpc.default_authority': opts.tls.serverName,
    'grpc.keepalive_time_ms': 2_000,
    'grpc.keepalive_timeout_ms': 2_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1_000,
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  }) as unknown as HaRawClient;
  /** A ready connection, or `not_sent` at the deadline or when `signal` aborts first. */
  const ready = (signal: AbortSignal | undefined): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const notSent = (why: string): ChannelError => new ChannelError(ChannelReason.notSent, `the active node at ${opts.address} is not reachable: ${why}`);
      if (signal?.aborted === true) return reject(notSent('another node took over'));
      const abort = (): void => reject(notSent('another node took over'));
      signal?.addEventListener('abort', abort, { once: true });
      raw.waitForReady(Date.now() + READY_MS, (err) => {
        signal?.removeEventListener('abort', abort);
        if (err) reject(notSent(err.message));
        else resolve();
      });
    });
  return {
    async forward(req, deadlineMs, signal) {
      await ready(signal);
      return new Promise<HaHttpReply>((resolve, reject) => {
        const call = raw.Forward(haWire.request(req), { deadline: Date.now() + deadlineMs }, (err, res) => {
          signal?.removeEventListener('abort', cancel);
          if (err || res === undefined) {
            reject(channelErrorOf(err ?? new Error('no reply')));
            return;
          }
          resolve(haWire.fromReply(res));
        });
        const cancel = (): void => call.cancel();
        signal?.addEventListener('abort', cancel);
      });
    },
    readLease() {
      return leaseDuplex<LeaseDown, LeaseUp, WireLeaseDown, WireLeaseUp>(raw.ReadLease(), leaseWire.fromDown, leaseWire.up);
    },
    close() {
      raw.close();
    },
  };
}
