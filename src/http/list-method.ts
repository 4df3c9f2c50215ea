/**
 * Vault clients (node-vault, hvac) send the non-standard `LIST` method, which Node's HTTP parser
 * rejects before any handler runs. This stream sits between the socket and the HTTP parser and
 * rewrites each request line `LIST /path HTTP/1.1` to `GET /path HTTP/1.1` plus a header
 * `X-Tessera-Method: LIST <this process's mark>`, which `clientMethod` turns back into LIST.
 *
 * To find request lines it frames HTTP/1.1 requests: the head up to the blank line, then a body
 * of Content-Length bytes or chunked. Anything it cannot frame switches it to pass-through for
 * the rest of the connection, and Node's parser reports the error as it would have.
 *
 *   net.createServer((socket) => httpServer.emit('connection', listAware(socket)));
 */
import { randomBytes } from 'node:crypto';
import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';

export const LIST_HEADER = 'x-tessera-method';
/**
 * The header's value: random per process, so a client can never set it. The framer also drops
 * the header from every head it frames; the value covers heads it no longer frames (pass-through).
 */
export const LIST_MARK = `LIST ${randomBytes(16).toString('hex')}`;
const MAX_HEAD = 64 * 1024;

/**
 * The method a client sent on a connection of this process: `LIST` where the framer rewrote its
 * request line (its header carries this process's mark), else the request line's own. Only the
 * socket path asks this; a request relayed by a standby carries its method explicitly, and the
 * marker is never relayed (standby.ts `relayableHeaders`).
 */
export function clientMethod(method: string, headers: Readonly<Record<string, string | string[] | undefined>>): string {
  const mark = headers[LIST_HEADER];
  return (Array.isArray(mark) ? mark[0] : mark) === LIST_MARK ? 'LIST' : method.toUpperCase();
}
const HEAD_END = Buffer.from('\r\n\r\n');
/** The header names the framer reads (and the marker it drops), anywhere in a head, any case. */
const FRAMING_NAMES = new RegExp(`content-length|transfer-encoding|${LIST_HEADER}`, 'i');
const CRLF = Buffer.from('\r\n');

type State =
  | { readonly kind: 'head' }
  | { readonly kind: 'body'; remaining: number }
  | { readonly kind: 'chunk-size' }
  | { readonly kind: 'chunk-data'; remaining: number }
  | { readonly kind: 'trailers' }
  | { readonly kind: 'passthrough' };

/** Where the framer is: between requests, inside a head, inside a body, or no longer framing. */
export type Phase = 'idle' | 'head' | 'body' | 'passthrough';

/** Incremental request framer; `push` returns the bytes to hand to the HTTP parser. */
export class ListRewriter {
  private state: State = { kind: 'head' };
  private buf: Buffer = Buffer.alloc(0);
  /** Requests whose last byte has been framed (head and whole body). */
  completed = 0;

  phase(): Phase {
    const k = this.state.kind;
    if (k === 'passthrough') return 'passthrough';
    if (k === 'head') return this.buf.length === 0 ? 'idle' : 'head';
    return 'body';
  }

  push(chunk: Buffer): Buffer {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Buffer[] = [];
    for (;;) {
      const s = this.state;
      if (s.kind === 'passthrough') {
        out.push(this.buf);
        this.buf = Buffer.alloc(0);
        break;
      }
      if (this.buf.length === 0) break;
      if (s.kind === 'body' || s.kind === 'chunk-data') {
        const n = Math.min(s.remaining, this.buf.length);
        out.push(this.buf.subarray(0, n));
        this.buf = this.buf.subarray(n);
        s.remaining -= n;
        if (s.remaining === 0 && s.kind === 'body') {
          this.state = { kind: 'head' };
          this.completed++;
        } else if (s.remaining === 0) this.state = { kind: 'chunk-size' };
        continue;
      }
      if (s.kind === 'chunk-size') {
        const eol = this.buf.indexOf(CRLF);
        if (eol === -1) {
          if (this.buf.length > 1024) this.state = { kind: 'passthrough' };
          break;
        }
        const size = parseInt(this.buf.subarray(0, eol).toString('latin1').split(';')[0]?.trim() ?? '', 16);
        out.push(this.buf.subarray(0, eol + 2));
        this.buf = this.buf.subarray(eol + 2);
        if (!Number.isFinite(size) || size < 0) this.state = { kind: 'passthrough' };
        else if (size === 0) this.state = { kind: 'trailers' };
        else this.state = { kind: 'chunk-data', remaining: size + 2 };
        continue;
      }
      if (s.kind === 'trailers') {
        // Either an empty line, or trailer fields ending with a blank line.
        if (this.buf.length < 2) break;
        if (this.buf[0] === 0x0d && this.buf[1] === 0x0a) {
          out.push(this.buf.subarray(0, 2));
          this.buf = this.buf.subarray(2);
          this.state = { kind: 'head' };
          this.completed++;
          continue;
        }
        const end = this.buf.indexOf(HEAD_END);
        if (end === -1) {
          if (this.buf.length > MAX_HEAD) this.state = { kind: 'passthrough' };
          break;
        }
        out.push(this.buf.subarray(0, end + 4));
        this.buf = this.buf.subarray(end + 4);
        this.state = { kind: 'head' };
        this.completed++;
        continue;
      }
      // head. A request line starts with a method token; anything else (a TLS ClientHello sent to
      // this plain port, binary garbage) goes to Node's parser at once, which answers 400 instead
      // of leaving the client waiting for a header block that never comes.
      const first = this.buf[0] as number;
      if (!((first >= 0x41 && first <= 0x5a) || first === 0x0d || first === 0x0a)) {
        this.state = { kind: 'passthrough' };
        continue;
      }
      const end = this.buf.indexOf(HEAD_END);
      if (end === -1) {
        if (this.buf.length > MAX_HEAD) this.state = { kind: 'passthrough' };
        break;
      }
      const head = this.buf.subarray(0, end + 4);
      this.buf = this.buf.subarray(end + 4);
      out.push(this.rewriteHead(head));
    }
    return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
  }

  private rewriteHead(head: Buffer): Buffer {
    const text = head.toString('latin1');
    let contentLength = 0;
    let chunked = false;
    let forged = false;
    // Most heads (a GET, a HEAD) name none of the three headers looked at below: one scan for
    // their names instead of splitting every line. A line the loop would act on holds its name
    // (ASCII; no latin1 character case-folds to ASCII), so a head this skips has none.
    const lines = FRAMING_NAMES.test(text) ? text.split('\r\n').slice(1) : [];
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      if (name === LIST_HEADER) forged = true;
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') contentLength = /^\d+$/.test(value) ? Number(value) : NaN;
      else if (name === 'transfer-encoding' && /chunked/i.test(value)) chunked = true;
    }
    if (chunked) this.state = { kind: 'chunk-size' };
    else if (!Number.isFinite(contentLength)) this.state = { kind: 'passthrough' };
    else if (contentLength > 0) this.state = { kind: 'body', remaining: contentLength };
    else {
      this.state = { kind: 'head' };
      this.completed++;
    }
    // A client's own marker header is dropped (a line folded onto it goes with it).
    const own = forged ? text.replace(new RegExp(`\\r\\n${LIST_HEADER}[ \\t]*:[^\\r]*(?:\\r\\n[ \\t][^\\r]*)*`, 'gi'), '') : text;
    if (!own.startsWith('LIST ')) return forged ? Buffer.from(own, 'latin1') : head;
    const eol = own.indexOf('\r\n');
    return Buffer.from(`GET ${own.slice(5, eol)}\r\n${LIST_HEADER}: ${LIST_MARK}${own.slice(eol)}`, 'latin1');
  }
}

/**
 * Bounds on a slow or silent client, enforced here because every byte passes through this
 * framer first (Node's own header timer never sees a head the framer still holds). Each is a
 * deadline, not an inactivity timer, so one byte every few seconds does not extend it.
 */
export interface ConnectionTimeouts {
  /** From a connection's opening, or a request's first byte, until its head is complete. */
  readonly headersMs: number;
  /** From a complete head until the last byte of its body. */
  readonly bodyMs: number;
  /** From a connection's last response until the next request's first byte (keep-alive). */
  readonly idleMs: number;
}

/** Vault's header timeout (10 s); a body deadline that lets 32 MiB through slow links; idle a little over a minute. */
export const DEFAULT_TIMEOUTS: ConnectionTimeouts = { headersMs: 10_000, bodyMs: 60_000, idleMs: 65_000 };

const REQUEST_TIMEOUT = Buffer.from('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 38\r\n\r\n{"errors":["request timed out (408)"]}', 'latin1');

interface Connection {
  responded(): void;
}

const connections = new WeakMap<object, Connection>();

/** Tells the connection behind `socket` (a listAware duplex) that one response has been written. */
export function markResponded(socket: unknown): void {
  if (typeof socket === 'object' && socket !== null) connections.get(socket)?.responded();
}

/** A Duplex over `socket` whose readable side has LIST request lines rewritten, with deadlines. */
export function listAware(socket: Socket | Duplex, timeouts: ConnectionTimeouts = DEFAULT_TIMEOUTS): Duplex {
  const rewriter = new ListRewriter();
  let responses = 0;
  let timer: NodeJS.Timeout | undefined;
  // What the running deadline is for: 'fresh' until the first byte, then the framer's phase
  // ('idle' only once every framed request has been answered; 'busy' while a handler runs).
  let timing = 'fresh';
  const expire = (): void => {
    const answered = responses >= rewriter.completed;
    if (answered && (timing === 'head' || timing === 'body') && !socket.destroyed) socket.end(REQUEST_TIMEOUT, () => socket.destroy());
    else socket.destroy();
  };
  const startTimer = (ms: number | undefined): void => {
    if (timer) clearTimeout(timer);
    timer = ms === undefined ? undefined : setTimeout(expire, ms);
    timer?.unref();
  };
  const retime = (): void => {
    const phase = rewriter.phase();
    const next = phase === 'idle' ? (responses >= rewriter.completed ? 'idle' : 'busy') : phase;
    if (next === timing || next === 'passthrough') return; // passthrough keeps the running deadline
    const continues = timing === 'fresh' && next === 'head'; // the first head's deadline runs from the opening
    timing = next;
    if (continues) return;
    startTimer(next === 'head' ? timeouts.headersMs : next === 'body' ? timeouts.bodyMs : next === 'idle' ? timeouts.idleMs : undefined);
  };
  startTimer(timeouts.headersMs);

  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      // http's end() of a response hands down an empty chunk: no syscall for it.
      if (chunk.length === 0) cb();
      else socket.write(chunk, cb);
    },
    final(cb) {
      socket.end();
      cb();
    },
    destroy(err, cb) {
      if (timer) clearTimeout(timer);
      socket.destroy(err ?? undefined);
      cb(err);
    },
  });
  connections.set(duplex, {
    responded: () => {
      responses++;
      retime();
    },
  });
  socket.on('data', (chunk: Buffer) => {
    const out = rewriter.push(chunk);
    retime();
    if (out.length > 0 && !duplex.push(out)) socket.pause();
  });
  socket.on('end', () => duplex.push(null));
  socket.on('error', (e) => duplex.destroy(e));
  socket.on('close', () => {
    if (timer) clearTimeout(timer);
    duplex.destroy();
  });
  const s = socket as Socket;
  Object.assign(duplex, {
    remoteAddress: s.remoteAddress,
    remotePort: s.remotePort,
    localAddress: s.localAddress,
    localPort: s.localPort,
    encrypted: (s as { encrypted?: boolean }).encrypted,
    // The deadlines above own the connection's time; Node's inactivity timers would only reset them.
    setTimeout: () => duplex,
    setNoDelay: (v?: boolean) => {
      s.setNoDelay?.(v);
      return duplex;
    },
    setKeepAlive: (e?: boolean, d?: number) => {
      s.setKeepAlive?.(e, d);
      return duplex;
    },
  });
  return duplex;
}
