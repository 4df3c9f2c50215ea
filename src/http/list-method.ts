/**
 * Vault clients (node-vault, hvac) send the non-standard `LIST` method, which Node's HTTP parser
 * rejects before any handler runs. This stream sits between the socket and the HTTP parser and
 * rewrites each request line `LIST /path HTTP/1.1` to `GET /path HTTP/1.1` plus a header
 * `X-Tessera-Method: LIST`, which the request mapper turns back into a list operation.
 *
 * To find request lines it frames HTTP/1.1 requests: the head up to the blank line, then a body
 * of Content-Length bytes or chunked. Anything it cannot frame switches it to pass-through for
 * the rest of the connection, and Node's parser reports the error as it would have.
 *
 *   net.createServer((socket) => httpServer.emit('connection', listAware(socket)));
 */
import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';

export const LIST_HEADER = 'x-tessera-method';
const MAX_HEAD = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

type State =
  | { readonly kind: 'head' }
  | { readonly kind: 'body'; remaining: number }
  | { readonly kind: 'chunk-size' }
  | { readonly kind: 'chunk-data'; remaining: number }
  | { readonly kind: 'trailers' }
  | { readonly kind: 'passthrough' };

/** Incremental request framer; `push` returns the bytes to hand to the HTTP parser. */
export class ListRewriter {
  private state: State = { kind: 'head' };
  private buf: Buffer = Buffer.alloc(0);

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
        if (s.remaining === 0) this.state = s.kind === 'body' ? { kind: 'head' } : { kind: 'chunk-size' };
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
        continue;
      }
      // head
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
    for (const line of text.split('\r\n').slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') contentLength = /^\d+$/.test(value) ? Number(value) : NaN;
      else if (name === 'transfer-encoding' && /chunked/i.test(value)) chunked = true;
    }
    if (chunked) this.state = { kind: 'chunk-size' };
    else if (!Number.isFinite(contentLength)) this.state = { kind: 'passthrough' };
    else if (contentLength > 0) this.state = { kind: 'body', remaining: contentLength };
    else this.state = { kind: 'head' };
    if (!text.startsWith('LIST ')) return head;
    const eol = text.indexOf('\r\n');
    return Buffer.from(`GET ${text.slice(5, eol)}\r\n${LIST_HEADER}: LIST${text.slice(eol)}`, 'latin1');
  }
}

/** A Duplex over `socket` whose readable side has LIST request lines rewritten. */
export function listAware(socket: Socket | Duplex): Duplex {
  const rewriter = new ListRewriter();
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      socket.write(chunk, cb);
    },
    final(cb) {
      socket.end();
      cb();
    },
    destroy(err, cb) {
      socket.destroy(err ?? undefined);
      cb(err);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    const out = rewriter.push(chunk);
    if (out.length > 0 && !duplex.push(out)) socket.pause();
  });
  socket.on('end', () => duplex.push(null));
  socket.on('error', (e) => duplex.destroy(e));
  socket.on('close', () => duplex.destroy());
  const s = socket as Socket;
  Object.assign(duplex, {
    remoteAddress: s.remoteAddress,
    remotePort: s.remotePort,
    localAddress: s.localAddress,
    localPort: s.localPort,
    encrypted: (s as { encrypted?: boolean }).encrypted,
    setTimeout: (ms: number, cb?: () => void) => {
      s.setTimeout?.(ms, cb);
      return duplex;
    },
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
