/**
 * A TCP proxy a test or script controls, to play a network partition between two real processes:
 * forwards 127.0.0.1:<port> to `target` until `cut()`, which resets every open connection and
 * refuses (resets) new ones until `heal()`. The one implementation: the nemesis (scripts/nemesis.mjs)
 * uses it too.
 *
 *   const proxy = await startTcpProxy('127.0.0.1:8201');
 *   proxy.address;            // '127.0.0.1:40123': hand this out instead of the target
 *   proxy.cut();              // open connections die now; new ones are reset on accept
 *   proxy.heal();             // new connections are forwarded again
 *   await proxy.close();
 *
 * `holdAfter` plays a client that froze (SIGSTOP) right after sending a given message: once a
 * client chunk it matches is forwarded, that connection's later client bytes wait in the proxy
 * (the server's answers still flow) until `release()`.
 */
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export interface TcpProxyStats {
  /** Connections forwarded to the target. */
  readonly forwarded: number;
  /** Connections reset on accept while cut. */
  readonly refused: number;
  /** Forwarded connections open right now. */
  readonly open: number;
}

export interface TcpProxy {
  /** "127.0.0.1:<port>" the proxy listens on. */
  readonly address: string;
  readonly port: number;
  cut(): void;
  heal(): void;
  readonly isCut: boolean;
  stats(): TcpProxyStats;
  /** Resets every connection and stops listening. */
  close(): Promise<void>;
  /** Connections whose client bytes wait after a `holdAfter` match. */
  held(): number;
  /** Forwards what the held connections sent meanwhile, and holds nothing more. */
  release(): void;
}

function splitTarget(target: string): { host: string; port: number } {
  const at = target.lastIndexOf(':');
  const port = Number(target.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`bad proxy target "${target}": expected host:port`);
  return { host: target.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port };
}

/** `listenPort` 0 (the default) picks a free port. */
export async function startTcpProxy(target: string, opts: { listenPort?: number; holdAfter?: (clientChunk: Buffer) => boolean } = {}): Promise<TcpProxy> {
  const to = splitTarget(target);
  const open = new Set<[Socket, Socket]>();
  let isCut = false;
  let forwarded = 0;
  let refused = 0;
  const held = new Set<[Socket, Socket]>();
  let holding = opts.holdAfter !== undefined;

  // resetAndDestroy sends an RST: the peer sees ECONNRESET at once, as in a dropped link.
  const reset = (s: Socket) => {
    if (!s.destroyed) s.resetAndDestroy();
  };

  const server = createServer((down) => {
    if (isCut) {
      refused++;
      down.on('error', () => undefined);
      reset(down);
      return;
    }
    forwarded++;
    const up = connect(to.port, to.host);
    const pair: [Socket, Socket] = [down, up];
    open.add(pair);
    down.pipe(up);
    up.pipe(down);
    // Added after pipe's own listener: the matching chunk is forwarded before the hold.
    down.on('data', (chunk: Buffer) => {
      if (!holding || held.has(pair) || opts.holdAfter?.(chunk) !== true) return;
      held.add(pair);
      down.unpipe(up);
      down.pause();
    });
    // Either side failing takes the other down with it: no half-open pairs.
    down.on('error', () => reset(up));
    up.on('error', () => reset(down));
    down.on('close', () => {
      open.delete(pair);
      held.delete(pair);
      reset(up);
    });
    up.on('close', () => {
      open.delete(pair);
      reset(down);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.listenPort ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  const dropAll = () => {
    for (const [down, up] of [...open]) {
      reset(down);
      reset(up);
    }
  };

  return {
    address: `127.0.0.1:${port}`,
    port,
    cut() {
      isCut = true;
      dropAll();
    },
    heal() {
      isCut = false;
    },
    get isCut() {
      return isCut;
    },
    stats: () => ({ forwarded, refused, open: open.size }),
    held: () => held.size,
    release() {
      holding = false;
      for (const [down, up] of held) down.pipe(up);
      held.clear();
    },
    async close() {
      isCut = true;
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
