/**
 * What a CLI run touches outside itself, injected so tests run `main` in-process: the three
 * streams, the environment, and the services the `server` and `license` commands start.
 *
 *   const code = await main(['read', 'secret/foo'], { stdout, stderr, stdin, env: {} });
 */
import type { ServerOptions } from '../node/index.js';

export interface Output {
  write(chunk: string): unknown;
  readonly isTTY?: boolean | undefined;
  readonly columns?: number | undefined;
}

export interface Input extends AsyncIterable<string | Buffer> {
  readonly isTTY?: boolean | undefined;
  setRawMode?(mode: boolean): unknown;
  /** Present on real streams; the hidden prompt needs events to read key by key. */
  on?(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  off?(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  pause?(): unknown;
  resume?(): unknown;
}

export interface DevLicense {
  readonly licensePath: string;
  readonly issuerPubPath: string;
}

/** The in-process services some commands start; loaded lazily so client commands stay light. */
export interface Services {
  runServer(options: ServerOptions): Promise<void>;
  writeDevLicense(dir: string): Promise<DevLicense>;
}

export interface CliIo {
  readonly stdout: Output;
  readonly stderr: Output;
  readonly stdin: Input;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Passed to the API client; defaults to the global fetch. */
  readonly fetchImpl?: typeof fetch;
  /** Replaces the real services (tests). */
  readonly services?: Partial<Services>;
  /** How often long operations poll for progress; defaults to 500 ms. */
  readonly pollIntervalMs?: number;
}

/** The lazily imported real services, with any injected replacements taking precedence. */
export async function services(io: CliIo): Promise<Services> {
  return {
    runServer: io.services?.runServer ?? (async (o) => (await import('../node/index.js')).runServer(o)),
    writeDevLicense:
      io.services?.writeDevLicense ?? (async (d) => (await import('../license/index.js')).writeDevLicense(d)),
  };
}

/** Everything left on stdin, as UTF-8. */
export async function readAll(stdin: Input): Promise<string> {
  let text = '';
  for await (const chunk of stdin) text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
  return text;
}

/** The first line of stdin without its line ending (the whole input when it has no newline). */
export async function readLine(stdin: Input): Promise<string> {
  let text = '';
  for await (const chunk of stdin) {
    text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    const end = text.indexOf('\n');
    if (end >= 0) return text.slice(0, end).replace(/\r$/, '');
  }
  return text.replace(/\r$/, '');
}

/**
 * Prompts on stderr and reads a line from a TTY without echoing it. Resolves null on Ctrl-C or
 * Ctrl-D at an empty line, so the caller can stop without sending anything.
 */
export async function readHidden(stdin: Input, stderr: Output, prompt: string): Promise<string | null> {
  if (!stdin.setRawMode || !stdin.on || !stdin.off) return readLine(stdin);
  const on = stdin.on.bind(stdin);
  const off = stdin.off.bind(stdin);
  stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume?.();
  try {
    return await new Promise<string | null>((resolve) => {
      let value = '';
      const onData = (chunk: Buffer | string): void => {
        for (const ch of typeof chunk === 'string' ? chunk : chunk.toString('utf8')) {
          if (ch === '\r' || ch === '\n') return finish(value);
          if (ch === '\u0003' || (ch === '\u0004' && value === '')) return finish(null);
          if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
          else if (ch >= ' ') value += ch;
        }
      };
      const finish = (result: string | null): void => {
        off('data', onData);
        resolve(result);
      };
      on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause?.();
    stderr.write('\n');
  }
}
