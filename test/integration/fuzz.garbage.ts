/**
 * The fuzz's "request followed by garbage on the same socket" fault (issue 17): a generated
 * request is written in one socket write together with bytes Node's parser refuses. Whatever
 * the node does with the request, its client must read the request's real answer first; the
 * parser's 400 may only follow it. Which requests get a tail is a pure function of the seed and
 * the request's position, so fast-check's request sequence for a seed stays what it was.
 *
 *   const tail = garbageTail(seed, index);        // undefined for most requests
 *   const { first, rest } = await sendRaw(addr, bytesOf(r, token, tail), r.method === 'HEAD');
 */
import net from 'node:net';

export const TAILS = {
  /** A NUL byte and text: not a request line at all. */
  nul: '\x00garbage',
  /** A request of an HTTP version that does not exist. */
  http99: 'GET /v1/sys/health HTTP/9.9\r\nHost: x\r\n\r\n',
  /** The request itself is sent as HTTP/1.0 (no keep-alive), and a second one pipelined after it. */
  http10: 'GET /v1/sys/health HTTP/1.0\r\n\r\n',
} as const;
export type Tail = keyof typeof TAILS;

/** About one request in eight gets a tail: mulberry32 over (seed, index). */
export function garbageTail(seed: number, index: number): Tail | undefined {
  let t = (seed ^ Math.imul(index + 1, 0x9e3779b9)) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  const x = ((t ^ (t >>> 14)) >>> 0) % 24;
  return x === 0 ? 'nul' : x === 1 ? 'http99' : x === 2 ? 'http10' : undefined;
}

/** The request's bytes as an HTTP client would write them, then the tail. */
export function bytesOf(r: { method: string; path: string; headers: Readonly<Record<string, string>>; body?: string | Buffer }, host: string, auth: Readonly<Record<string, string>>, tail: Tail): Buffer {
  const version = tail === 'http10' ? '1.0' : '1.1';
  const headers: Record<string, string> = { Host: host, ...r.headers, ...auth };
  if (r.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(r.body));
  const head = `${r.method} ${r.path} HTTP/${version}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), r.body === undefined ? Buffer.alloc(0) : Buffer.from(r.body), Buffer.from(TAILS[tail], 'latin1')]);
}

export interface RawAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

/** One response at the start of `buf`: the answer and its length in bytes, or undefined if incomplete. */
function oneResponse(buf: Buffer, head: boolean): { answer: RawAnswer; length: number; stream: boolean } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
  const fields = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const contentType = fields.get('content-type') ?? '';
  const start = end + 4;
  if (contentType.startsWith('text/event-stream')) return { answer: { status, contentType, text: '' }, length: start, stream: true };
  if (head || status === 204 || status === 304) return { answer: { status, contentType, text: '' }, length: start, stream: false };
  if (/chunked/i.test(fields.get('transfer-encoding') ?? '')) {
    const parts: Buffer[] = [];
    let at = start;
    for (;;) {
      const eol = buf.indexOf('\r\n', at);
      if (eol < 0) return undefined;
      const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
      if (buf.length < eol + 2 + size + 2) return undefined;
      parts.push(buf.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
      if (size === 0) return { answer: { status, contentType, text: Buffer.concat(parts).toString('utf8') }, length: at, stream: false };
    }
  }
  const length = Number(fields.get('content-length') ?? 0);
  if (buf.length < start + length) return undefined;
  return { answer: { status, contentType, text: buf.subarray(start, start + length).toString('utf8') }, length: start + length, stream: false };
}

/**
 * Writes `bytes` in one write on a new connection and reads every answer until the node closes
 * it: the first answer, and those after it. An event stream ends the reading at its head.
 */
export function sendRaw(apiAddr: string, bytes: Buffer, head: boolean, timeoutMs = 15_000): Promise<{ first: RawAnswer; rest: RawAnswer[] }> {
  const url = new URL(apiAddr);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(url.port), url.hostname, () => sock.write(bytes));
    let buf = Buffer.alloc(0);
    const answers: RawAnswer[] = [];
    const finish = (): void => {
      clearTimeout(timer);
      sock.destroy();
      const [first, ...rest] = answers;
      if (first === undefined) reject(new Error(`no answer; received ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`));
      else resolve({ first, rest });
    };
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no close within ${timeoutMs} ms after ${answers.length} answers`));
    }, timeoutMs);
    sock.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      for (;;) {
        const one = oneResponse(buf, head && answers.length === 0);
        if (one === undefined) return;
        answers.push(one.answer);
        buf = buf.subarray(one.length);
        if (one.stream) return finish();
      }
    });
    // The node closes the connection after the parser's answer (or after an HTTP/1.0 answer).
    sock.on('close', finish);
    sock.on('error', (e) => {
      if (answers.length > 0) finish();
      else reject(e);
    });
  });
}
