/**
 * The LIST framer (list-method.ts) on its own: what it hands Node's parser for heads with and
 * without the headers it reads, in any case, alone and pipelined in one chunk or split anywhere.
 */
import { LIST_HEADER, LIST_MARK, ListRewriter } from './list-method.js';

const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');
/** Everything `push` returns for `chunks`, as text. */
function framed(chunks: readonly string[]): { out: string; completed: number; phase: string } {
  const r = new ListRewriter();
  const out = chunks.map((c) => r.push(bytes(c)).toString('latin1')).join('');
  return { out, completed: r.completed, phase: r.phase() };
}
const mark = `${LIST_HEADER}: ${LIST_MARK}`;

describe('ListRewriter', () => {
  it('passes a head without framing headers through unchanged, and rewrites a LIST one', () => {
    const get = bytes('GET /v1/secret/data/a HTTP/1.1\r\nHost: x\r\nX-Vault-Token: t\r\n\r\n');
    const r = new ListRewriter();
    expect(r.push(get)).toEqual(get);
    expect(r.completed).toBe(1);
    expect(r.phase()).toBe('idle');
    expect(framed(['LIST /v1/secret/metadata HTTP/1.1\r\nHost: x\r\n\r\n']).out).toBe(`GET /v1/secret/metadata HTTP/1.1\r\n${mark}\r\nHost: x\r\n\r\n`);
  });

  it('frames a body by Content-Length in any case, so a LIST after it is still found', () => {
    for (const name of ['Content-Length', 'content-length', 'CONTENT-LENGTH', 'cOnTeNt-LeNgTh']) {
      const put = `PUT /v1/a HTTP/1.1\r\n${name}: 26\r\n\r\nLIST /v1/not-a-request x\r\n`;
      const list = 'LIST /v1/b HTTP/1.1\r\n\r\n';
      const whole = framed([put + list]);
      expect(whole.out).toBe(`${put}GET /v1/b HTTP/1.1\r\n${mark}\r\n\r\n`);
      expect(whole.completed).toBe(2);
      // Split at every byte, the same.
      expect(framed([...put + list]).out).toBe(whole.out);
    }
  });

  it('frames a chunked body in any case of Transfer-Encoding', () => {
    for (const name of ['Transfer-Encoding', 'TRANSFER-ENCODING']) {
      const post = `POST /v1/a HTTP/1.1\r\n${name}: chunked\r\n\r\n5\r\nLIST \r\n0\r\n\r\n`;
      const r = framed([post, 'LIST /v1/c HTTP/1.1\r\n\r\n']);
      expect(r.out).toBe(`${post}GET /v1/c HTTP/1.1\r\n${mark}\r\n\r\n`);
      expect(r.completed).toBe(2);
    }
  });

  it("drops a client's own marker header in any case, on LIST and on other methods", () => {
    expect(framed(['GET /v1/a HTTP/1.1\r\nX-Tessera-Method: LIST x\r\nHost: y\r\n\r\n']).out).toBe('GET /v1/a HTTP/1.1\r\nHost: y\r\n\r\n');
    expect(framed([`LIST /v1/a HTTP/1.1\r\n${LIST_HEADER.toUpperCase()}: ${LIST_MARK}\r\n\r\n`]).out).toBe(`GET /v1/a HTTP/1.1\r\n${mark}\r\n\r\n`);
  });

  it('passes through what it cannot frame: a bad Content-Length, then everything after it', () => {
    const r = framed(['PUT /v1/a HTTP/1.1\r\nContent-Length: 1x\r\n\r\n', 'LIST /v1/b HTTP/1.1\r\n\r\n']);
    expect(r.out).toBe('PUT /v1/a HTTP/1.1\r\nContent-Length: 1x\r\n\r\nLIST /v1/b HTTP/1.1\r\n\r\n');
    expect(r.phase).toBe('passthrough');
  });
});
