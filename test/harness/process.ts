/**
 * One Tessera node as a real child process (`node dist/cli/main.js server ...`), with its output
 * captured line by line and a deadline on start-up. Build first (`npx tsc -p tsconfig.build.json`).
 *
 *   const node = await spawnNode({ args: ['server', '-dev', '-dev-listen-address', '127.0.0.1:0'], ready: 'banner' });
 *   node.apiAddr; node.rootToken;
 *   await node.stop(); // SIGTERM, resolves with { code: 0, signal: null } on a clean shutdown
 *
 * Tests normally go through `useHarness()` (harness.ts), which also kills every process it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { RUNTIME_ENV, RUNTIME_NODE_ARGS } from '../../src/cli/runtime.js';
import { vault } from './http.js';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
/** The built CLI; `TESSERA_MAIN` points at another build's main.js (the benches compare two builds). */
export const mainJs = process.env.TESSERA_MAIN ?? fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * How to tell that the node is serving: the dev banner on stdout, the listening log line, or
 * (`{ api }`, for a node on a known address whose output goes to a file) the API answering.
 */
export type Readiness = 'banner' | 'listening-log' | { readonly api: string };

export interface SpawnOptions {
  readonly args: readonly string[];
  readonly ready: Readiness;
  readonly env?: Readonly<Record<string, string>>;
  readonly readyTimeoutMs?: number;
  /**
   * Append stdout and stderr to this file instead of capturing them (the node writes it itself, so
   * the log outlives this process's pipes), and start the node in its own process group (a
   * terminal's Ctrl-C reaches only the script, which stops its nodes in order). Readiness must
   * then be `{ api }`; `stdoutLines`/`stderrLines` stay empty.
   */
  readonly logFile?: string;
  /** Node.js flags before the script (e.g. --cpu-prof, for profiles). */
  readonly nodeArgs?: readonly string[];
  /** Another script than dist/cli/main.js that takes the same arguments (a bench's stand-in server). */
  readonly script?: string;
}

export interface NodeProcess {
  readonly apiAddr: string;
  /** Dev nodes only, from the banner. */
  readonly rootToken: string | undefined;
  /** Dev nodes only, from the banner (base64). */
  readonly unsealKey: string | undefined;
  readonly proc: ChildProcess;
  readonly pid: number;
  /** True until the process has exited. */
  running(): boolean;
  /** Every line so far; the arrays keep growing while the process runs. */
  readonly stdoutLines: readonly string[];
  readonly stderrLines: readonly string[];
  /** Settles when the process has exited and its output is fully read. */
  readonly exited: Promise<ExitInfo>;
  /** Sends `signal` (SIGKILL unless given) and waits for the exit. A no-op once exited. */
  kill(signal?: NodeJS.Signals): Promise<ExitInfo>;
  /** SIGTERM, then waits; SIGKILLs and throws if the node has not exited within `timeoutMs`. */
  stop(timeoutMs?: number): Promise<ExitInfo>;
}

export class NodeStartError extends Error {}

const BANNER = {
  apiAddr: /^Api Address: (\S+)$/,
  unsealKey: /^Unseal Key: (\S+)$/,
  rootToken: /^Root Token: (\S+)$/,
} as const;

function tail(lines: readonly string[], n = 20): string {
  return lines.slice(-n).join('\n');
}

export async function spawnNode(opts: SpawnOptions): Promise<NodeProcess> {
  const script = opts.script ?? mainJs;
  if (!existsSync(script)) throw new NodeStartError(`${script} is missing: run \`npx tsc -p tsconfig.build.json\` first`);
  if (opts.logFile !== undefined && typeof opts.ready === 'string') throw new NodeStartError('a node logging to a file is ready when its API answers: ready { api }');
  const fd = opts.logFile === undefined ? undefined : openSync(opts.logFile, 'a');
  // Started as bin/tessera.js starts a server (src/cli/runtime.ts), stand-in servers too (a bench's floor).
  const proc = spawn(process.execPath, [...RUNTIME_NODE_ARGS, ...(opts.nodeArgs ?? []), script, ...opts.args], {
    cwd: repoRoot,
    env: { ...process.env, ...RUNTIME_ENV, ...opts.env },
    stdio: fd === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', fd, fd],
    detached: fd !== undefined,
  });
  if (fd !== undefined) closeSync(fd);
  const stdoutLines: string[] = [];
  const stderrLines: string[] = [];
  const banner: { apiAddr?: string; unsealKey?: string; rootToken?: string } = {};
  let listeningAddr: string | undefined;
  let onLine: () => void = () => undefined;

  if (proc.stdout) createInterface({ input: proc.stdout }).on('line', (line) => {
    stdoutLines.push(line);
    for (const [field, re] of Object.entries(BANNER) as Array<[keyof typeof BANNER, RegExp]>) {
      const m = re.exec(line);
      if (m?.[1] !== undefined) banner[field] = m[1];
    }
    onLine();
  });
  if (proc.stderr) createInterface({ input: proc.stderr }).on('line', (line) => {
    stderrLines.push(line);
    if (listeningAddr === undefined && line.includes('"http listening"')) {
      try {
        const parsed = JSON.parse(line) as { msg?: unknown; api_addr?: unknown };
        if (parsed.msg === 'http listening' && typeof parsed.api_addr === 'string') listeningAddr = parsed.api_addr;
      } catch {
        // Not JSON: not the line we wait for.
      }
    }
    onLine();
  });

  // 'close' rather than 'exit': it fires after stdout and stderr are drained, so no line is lost.
  const exited = new Promise<ExitInfo>((resolve) => {
    proc.once('close', (code, signal) => resolve({ code, signal }));
  });
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    onLine();
  });

  // `{ api }`: polled until sys/seal-status answers (any status).
  let apiAnswered = false;
  const ready = opts.ready;
  if (typeof ready === 'object') {
    void (async () => {
      while (!hasExited && !apiAnswered) {
        try {
          await vault(ready.api).get('sys/seal-status');
          apiAnswered = true;
        } catch {
          await delay(50);
        }
      }
      onLine();
    })();
  }

  const isReady = (): string | undefined =>
    typeof ready === 'object'
      ? apiAnswered
        ? ready.api
        : undefined
      : ready === 'banner'
      ? // The dev banner prints the root token last (a bench's stand-in server prints no unseal key).
        banner.apiAddr !== undefined && banner.rootToken !== undefined
        ? banner.apiAddr
        : undefined
      : listeningAddr;

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<ExitInfo> => {
    if (!hasExited) proc.kill(signal);
    return exited;
  };

  const stop = async (timeoutMs = 15_000): Promise<ExitInfo> => {
    if (!hasExited) proc.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const result = await Promise.race([exited, timedOut]);
    clearTimeout(timer);
    if (result === 'timeout') {
      await kill('SIGKILL');
      throw new NodeStartError(`node did not exit within ${timeoutMs} ms of SIGTERM; stderr tail:\n${tail(stderrLines)}`);
    }
    return result;
  };

  const tailOf = async () =>
    opts.logFile === undefined ? `stdout:\n${tail(stdoutLines)}\nstderr:\n${tail(stderrLines)}` : `${opts.logFile}:\n${tail((await readFile(opts.logFile, 'utf8').catch(() => '')).split('\n'), 15)}`;
  const timeoutMs = opts.readyTimeoutMs ?? 20_000;
  const apiAddr = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      onLine = () => undefined;
      void kill('SIGKILL');
      void tailOf().then((t) => reject(new NodeStartError(`node not ready within ${timeoutMs} ms; ${t}`)));
    }, timeoutMs);
    onLine = () => {
      const addr = isReady();
      if (addr !== undefined) {
        clearTimeout(timer);
        onLine = () => undefined;
        resolve(addr);
      } else if (hasExited) {
        clearTimeout(timer);
        onLine = () => undefined;
        void tailOf().then((t) => reject(new NodeStartError(`node exited before it was ready (code ${proc.exitCode}, signal ${proc.signalCode}); ${t}`)));
      }
    };
    onLine();
  });

  return {
    apiAddr,
    rootToken: banner.rootToken,
    unsealKey: banner.unsealKey,
    proc,
    pid: proc.pid!,
    running: () => !hasExited,
    stdoutLines,
    stderrLines,
    exited,
    kill,
    stop,
  };
}

export interface CliOptions {
  /** Replaces the environment entirely (PATH is kept), so no TESSERA_/VAULT_ variable leaks in. */
  readonly env?: Readonly<Record<string, string>>;
  /** Added to this process's environment (ignored when `env` is given). */
  readonly addEnv?: Readonly<Record<string, string>>;
  /** Written to stdin, then closed; stdin is ignored when not given. */
  readonly stdin?: string;
}

/** Runs a short-lived CLI command (`license dev -out DIR`, ...) and resolves with its output. */
export async function runCli(
  args: readonly string[],
  timeoutMs = 20_000,
  opts: CliOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = opts.env === undefined ? { ...process.env, ...opts.addEnv } : { PATH: process.env.PATH ?? '', ...opts.env };
  const proc = spawn(process.execPath, [mainJs, ...args], { cwd: repoRoot, env, stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  proc.stdin?.end(opts.stdin);
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => proc.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}
