/**
 * A server-sent event client for tests: opens `GET <url>` with a token, parses frames as they
 * arrive, and keeps every raw byte (to scan for secrets).
 *
 *   const s = await openSse(`${n.apiAddr}/v1/sys/replication/events`, n.rootToken);
 *   await s.waitFor((events) => events.some((e) => e.data.type === 'mode-changed'));
 *   s.close();
 */
import { eventually } from '../harness/eventually.js';

export interface SseFrame {
  readonly id: string | undefined;
  readonly data: any;
}

export interface SseClient {
  readonly status: number;
  readonly contentType: string;
  readonly frames: SseFrame[];
  /** Comment lines seen (heartbeats). */
  readonly comments: string[];
  /** Every byte of the body so far, as text. */
  raw(): string;
  /** Polls (with a deadline) until `pred` holds for the frames so far. */
  waitFor(pred: (frames: readonly SseFrame[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Whether the server has ended the body. */
  ended(): boolean;
  close(): void;
}

export async function openSse(url: string, token: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { 'X-Vault-Token': token, Accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const frames: SseFrame[] = [];
  const comments: string[] = [];
  let raw = '';
  let buf = '';
  let ended = false;
  const parse = (): void => {
    for (let at = buf.indexOf('\n\n'); at !== -1; at = buf.indexOf('\n\n')) {
      const block = buf.slice(0, at);
      buf = buf.slice(at + 2);
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) comments.push(line.slice(1).trim());
        else if (line.startsWith('id: ')) id = line.slice(4);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) frames.push({ id, data: JSON.parse(data.join('\n')) });
    }
  };
  if (res.body) {
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          const text = decoder.decode(chunk, { stream: true });
          raw += text;
          buf += text;
          parse();
        }
      } catch {
        // aborted by close()
      } finally {
        ended = true;
      }
    })();
  } else ended = true;
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    frames,
    comments,
    raw: () => raw,
    ended: () => ended,
    async waitFor(pred, timeoutMs = 15_000) {
      await eventually(() => {
        if (!pred(frames)) throw new Error(`not yet; frames so far: ${frames.map((f) => `${f.data.kind}:${f.data.type}`).join(', ')}`);
      }, { timeoutMs, intervalMs: 50 });
    },
    close: () => abort.abort(),
  };
}
