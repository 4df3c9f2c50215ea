/**
 * The secondary's end of the replication channel: a PrimaryClient over mutual TLS. The server's
 * identity is pinned to `tls.serverName` (its DNS SAN); keepalive pings every 2 s notice a dead
 * primary within about 4 s, which ends an open WAL stream with a ChannelError('unavailable').
 *
 *   const client = connectPrimary({ address: '10.0.0.5:8201', tls });
 *   const info = await client.ping('dr-east', 1_000);     // probing: one address, its own deadline
 *   const stream = client.streamWal({ secondaryId, guard, maxBatchEntries: 512 }, { onMessage, onEnd });
 *   client.close();
 */
import * as grpc from '@grpc/grpc-js';
import type { ConnectionState, PrimaryClient, StreamHandle, TlsMaterial } from '../../replication/index.js';
import { decode, encode } from './codec.js';
import { MAX_MESSAGE_BYTES, loadReplication, type RawClient, type Unary } from './proto.js';
import { ChannelError, ChannelReason } from '../../replication/index.js';
import { channelErrorOf } from './status.js';
import type * as wire from './wire.js';

export interface ConnectOptions {
  /** host:port of the primary's cluster listener. */
  readonly address: string;
  /** caPem verifies the primary; certPem/keyPem are this secondary's client leaf. */
  readonly tls: TlsMaterial;
  /** Deadline of unary calls that name none. Default 10 s. */
  readonly defaultDeadlineMs?: number;
}

const DEFAULT_DEADLINE_MS = 10_000;
/** Longest a forwarded write waits for a connection before it is refused as never sent. */
const CONNECT_DEADLINE_MS = 5_000;

const STATE_NAMES: Record<grpc.connectivityState, ConnectionState> = {
  [grpc.connectivityState.IDLE]: 'idle',
  [grpc.connectivityState.CONNECTING]: 'connecting',
  [grpc.connectivityState.READY]: 'ready',
  [grpc.connectivityState.TRANSIENT_FAILURE]: 'transient_failure',
  [grpc.connectivityState.SHUTDOWN]: 'shutdown',
};

export function connectPrimary(opts: ConnectOptions): PrimaryClient {
  const { Client } = loadReplication();
  const credentials = grpc.credentials.createSsl(
    Buffer.from(opts.tls.caPem),
    Buffer.from(opts.tls.keyPem),
    Buffer.from(opts.tls.certPem),
  );
  const raw = new Client(opts.address, credentials, {
    // Verify the server certificate against this name rather than the dialled address: it pins
    // the primary's identity and avoids Node's DEP0123 warning for TLS to an IP address. It is
    // also the SNI name by which the primary's shared cluster port picks this kind (server.ts).
    'grpc.ssl_target_name_override': opts.tls.serverName,
    'grpc.default_authority': opts.tls.serverName,
    'grpc.keepalive_time_ms': 2_000,
    'grpc.keepalive_timeout_ms': 2_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.initial_reconnect_backoff_ms': 250,
    'grpc.max_reconnect_backoff_ms': 5_000,
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    // No DNS TXT lookup for a gRPC service config (we use none). Each resolution of a host name
    // would send one, and a query DNS does not answer stays pending, uncancelled by close(), for
    // up to ~25 s: it kept a stopped node's process alive, as in a container whose DNS forwards
    // the query upstream and gets no answer (test/e2e/sigterm-exit.test.ts).
    'grpc.service_config_disable_resolution': 1,
  }) as unknown as RawClient;
  const defaultDeadlineMs = opts.defaultDeadlineMs ?? DEFAULT_DEADLINE_MS;
  /** grpc-js lets calls outlive close(); ours end with it. */
  const streams = new Set<StreamHandle>();
  let closed = false;

  /** One unary call: encode, send with a deadline, decode; every failure is a ChannelError. */
  function invoke<Req, Res, Out>(
    method: Unary<Req, Res>,
    request: () => Req,
    reply: (res: Res) => Out,
    deadlineMs = defaultDeadlineMs,
  ): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      if (closed) {
        reject(closedError());
        return;
      }
      try {
        method.call(raw, request(), { deadline: Date.now() + deadlineMs }, (err, res) => {
          if (err || res === undefined) {
            reject(channelErrorOf(err ?? new Error('empty reply')));
            return;
          }
          try {
            resolve(reply(res));
          } catch (e) {
            reject(channelErrorOf(e));
          }
        });
      } catch (e) {
        reject(channelErrorOf(e));
      }
    });
  }

  /**
   * Resolves once the channel is READY (connecting it if idle); else rejects with `not_sent`: when
   * it is failing or shut down, or is still connecting after `ms`. A call that then fails may have
   * reached the primary; one refused here certainly did not.
   */
  function ready(ms: number): Promise<void> {
    const channel = raw.getChannel();
    const deadline = Date.now() + ms;
    return new Promise<void>((resolve, reject) => {
      const notSent = (state: string): void => reject(new ChannelError(ChannelReason.notSent, `no ready connection to the primary (${state})`));
      const check = (): void => {
        if (closed) return reject(closedError());
        const state = channel.getConnectivityState(true);
        if (state === grpc.connectivityState.READY) return resolve();
        if (state === grpc.connectivityState.TRANSIENT_FAILURE || state === grpc.connectivityState.SHUTDOWN || Date.now() >= deadline) return notSent(STATE_NAMES[state]);
        channel.watchConnectivityState(state, deadline, (err) => (err ? notSent(STATE_NAMES[state]) : check()));
      };
      check();
    });
  }

  return {
    ping: (secondaryId, deadlineMs) => invoke(raw.Ping, () => ({ secondaryId }), decode.pingInfo, deadlineMs),
    bootstrap: (req, deadlineMs) => invoke(raw.Bootstrap, () => encode.bootstrapRequest(req), decode.bootstrapInfo, deadlineMs),
    heartbeat: (req) => invoke(raw.Heartbeat, () => encode.heartbeatRequest(req), decode.heartbeatReply),
    openSnapshot: (secondaryId) => invoke(raw.OpenSnapshot, () => ({ secondaryId }), decode.snapshotInfo),
    closeSnapshot: (snapshotId) => invoke(raw.CloseSnapshot, () => ({ snapshotId }), () => undefined),
    pageHashes: (snapshotId, tree) => invoke(raw.PageHashes, () => ({ snapshotId, tree }), (r) => r.hashes),
    subpageHashes: (snapshotId, tree, page) =>
      invoke(raw.SubpageHashes, () => ({ snapshotId, tree, page }), (r) => r.hashes),
    leaves: (snapshotId, tree, page, subpages) =>
      invoke(raw.Leaves, () => ({ snapshotId, tree, page, subpages: [...subpages] }), decode.leaves),
    fetchValues: (snapshotId, keys) => invoke(raw.FetchValues, () => ({ snapshotId, keys: [...keys] }), decode.values),
    // A write must tell "never sent" from "may have arrived": it is sent only on a ready connection.
    forward: async (secondaryId, req, deadlineMs = defaultDeadlineMs) => {
      const started = Date.now();
      await ready(Math.min(deadlineMs, CONNECT_DEADLINE_MS));
      return invoke(raw.Forward, () => encode.forwardRequest(secondaryId, req), decode.forwardReply, Math.max(1, deadlineMs - (Date.now() - started)));
    },
    streamWal(req, handlers) {
      const start = (): grpc.ClientReadableStream<wire.StreamMessage> => {
        if (closed) throw closedError();
        return raw.StreamWal(encode.streamRequest(req));
      };
      const handle = openStream(start, {
        onMessage: handlers.onMessage,
        onEnd: (error) => {
          streams.delete(handle);
          handlers.onEnd(error);
        },
      });
      streams.add(handle);
      return handle;
    },
    connectionState: () => STATE_NAMES[raw.getChannel().getConnectivityState(false)],
    close() {
      closed = true;
      for (const stream of [...streams]) stream.cancel();
      raw.close();
    },
  };
}

/**
 * Runs one WAL stream. The next message is read only after `onMessage` settles, so a slow
 * secondary pushes back through HTTP/2 flow control to the primary's sink. `onEnd` runs exactly
 * once: with no error when the primary ended the stream or `cancel()` was called, with the
 * handler's own error when `onMessage` threw, else with a ChannelError.
 */
function openStream(
  start: () => grpc.ClientReadableStream<wire.StreamMessage>,
  handlers: Parameters<PrimaryClient['streamWal']>[1],
): StreamHandle {
  let ended = false;
  let cancelled = false;
  const finish = (error?: Error): void => {
    if (ended) return;
    ended = true;
    handlers.onEnd(error);
  };
  let call: grpc.ClientReadableStream<wire.StreamMessage>;
  try {
    call = start();
  } catch (e) {
    const error = channelErrorOf(e);
    queueMicrotask(() => finish(error));
    return { cancel: () => {} };
  }

  void (async () => {
    let failed: { error: unknown } | undefined;
    try {
      for await (const raw of call as AsyncIterable<wire.StreamMessage>) {
        if (cancelled) break;
        const msg = decode.streamMessage(raw);
        try {
          await handlers.onMessage(msg);
        } catch (error) {
          failed = { error };
          break;
        }
      }
    } catch (e) {
      call.cancel();
      finish(cancelled ? undefined : channelErrorOf(e));
      return;
    }
    if (!failed) return finish();
    call.cancel();
    finish(failed.error instanceof Error ? failed.error : new Error(String(failed.error)));
  })();

  return {
    cancel() {
      if (ended || cancelled) return;
      cancelled = true;
      call.cancel();
    },
  };
}

function closedError(): ChannelError {
  return new ChannelError(ChannelReason.unavailable, 'replication client is closed');
}
