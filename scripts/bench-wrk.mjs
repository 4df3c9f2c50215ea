/**
 * wrk (Debian's `wrk`, a C load generator) driving a Vault-style GET with a token: the bench's
 * load generator where the Node client's own cost must stay out of a ratio.
 *
 *   import { wrkAvailable, wrkGet } from './bench-wrk.mjs';
 *   if (wrkAvailable()) { const r = await wrkGet({ url, token, connections: 16, seconds: 5 }); r.rps; }
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export function wrkAvailable() {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (e) {
    // wrk --version exits 1 after printing its version.
    return e?.status === 1;
  }
}

/** Parses wrk's summary: requests per second, non-2xx answers, socket errors. */
export function parseWrk(text) {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const errors = /Socket errors:\s+connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const socketErrors = errors ? errors.slice(1).reduce((a, n) => a + Number(n), 0) : 0;
  const requests = Number(/(\d+) requests in/.exec(text)?.[1] ?? NaN);
  return { rps, requests, non2xx, socketErrors };
}

/**
 * One wrk run (one thread, `--latency`) with the Lua `script`; rejects when any answer was not a
 * 2xx. Requests per second and count, p50 and p99 in ms.
 */
export async function runWrk({ url, script, connections = 16, seconds = 5 }) {
  const dir = await mkdtemp(join(os.tmpdir(), 'tessera-wrk-'));
  try {
    const file = join(dir, 's.lua');
    await writeFile(file, script);
    const { stdout } = await run('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', file, url], { maxBuffer: 1 << 20 });
    const r = parseWrk(stdout);
    if (!(r.rps > 0) || r.non2xx > 0 || r.socketErrors > 0) throw new Error(`wrk against ${url}: ${r.non2xx} non-2xx answers, ${r.socketErrors} socket errors:\n${stdout}`);
    const ms = (re) => {
      const m = re.exec(stdout);
      return m ? Number(m[1]) * { us: 0.001, ms: 1, s: 1000 }[m[2]] : NaN;
    };
    return { ...r, p50Ms: ms(/ 50%\s+([\d.]+)(us|ms|s)/), p99Ms: ms(/ 99%\s+([\d.]+)(us|ms|s)/) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One wrk run of GET `url` with `X-Vault-Token`; rejects when any answer was not a 2xx. */
export function wrkGet({ url, token, connections = 16, seconds = 5 }) {
  return runWrk({ url, script: `wrk.method = "GET"\nwrk.headers["X-Vault-Token"] = ${JSON.stringify(token)}\n`, connections, seconds });
}
