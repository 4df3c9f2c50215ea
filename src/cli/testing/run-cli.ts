/**
 * Test support, not used by production code: runs `main` in-process with captured output.
 *
 *   const r = await runCli(['read', 'secret/x'], { env: { TESSERA_ADDR: fake.addr } });
 *   expect(r.code).toBe(0); expect(r.stdout).toContain('Key');
 */
import { Readable } from 'node:stream';
import { main } from '../main.js';
import type { CliIo, Input, Output } from '../io.js';

export interface CapturedOutput extends Output {
  readonly text: () => string;
}

export function capture(isTTY = false): CapturedOutput {
  const chunks: string[] = [];
  return {
    isTTY,
    columns: 80,
    write: (chunk: string) => {
      chunks.push(chunk);
      return true;
    },
    text: () => chunks.join(''),
  };
}

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions extends Partial<Omit<CliIo, 'stdout' | 'stderr' | 'stdin'>> {
  /** Text on stdin (not a TTY), or a ready stream. */
  readonly stdin?: string | Input;
  readonly stdoutTTY?: boolean;
  readonly stderrTTY?: boolean;
}

export async function runCli(argv: readonly string[], options: RunOptions = {}): Promise<CliRun> {
  const stdout = capture(options.stdoutTTY ?? false);
  const stderr = capture(options.stderrTTY ?? false);
  const stdin = typeof options.stdin === 'string' || options.stdin === undefined ? Readable.from([options.stdin ?? '']) : options.stdin;
  const code = await main(argv, { ...options, env: options.env ?? {}, stdout, stderr, stdin });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}
