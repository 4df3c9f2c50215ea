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
}

function splitTarget(target: string): { host: string; port: number } {
  const at = target.lastIndexOf(':');
  const port = Number(target.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`bad proxy target "${target}": expected host:port`);
  return { host: target.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port };
}

/** `listenPort` 0 (the default) picks a free port. */
export async function startTcpProxy(target: string, opts: { listenPort?: number } = {}): Promise<TcpProxy> {
  const to = splitTarget(target);
  const open = new Set<[Socket, Socket]>();
  let isCut = false;
  let forwarded = 0;
  let refused = 0;

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
    // Either side failing takes the other down with it: no half-open pairs.
    down.on('error', () => reset(up));
    up.on('error', () => reset(down));
    down.on('close', () => {
      open.delete(pair);
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
    async close() {
      isCut = true;
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
