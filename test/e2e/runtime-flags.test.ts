/**
 * A server started the way operators start one (`bin/tessera.js`: `npm start`, the image's
 * ENTRYPOINT, an installed `tessera`) runs with src/cli/runtime.ts's V8 flags and environment,
 * which bound its memory; the shebang, `npm start` and the image all go through that one file.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUNTIME_ENV, RUNTIME_NODE_ARGS } from '../../src/cli/runtime.js';
import { repoRoot } from '../harness/index.js';

const bin = join(repoRoot, 'bin/tessera.js');

test('the shebang, npm start and the image start a server through runtime.ts, and the process has its flags and environment', async () => {
  const shebang = (await readFile(bin, 'utf8')).split('\n')[0];
  const assignments = Object.entries(RUNTIME_ENV).map(([k, v]) => `${k}=${v}`);
  expect(shebang).toBe(`#!/usr/bin/env -S ${[...assignments, 'node', ...RUNTIME_NODE_ARGS].join(' ')}`);
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string>; bin: Record<string, string> };
  expect(pkg.scripts.start).toBe('./bin/tessera.js server -dev');
  expect(pkg.bin.tessera).toBe('bin/tessera.js');
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  expect(dockerfile).toContain('ln -s /app/bin/tessera.js /usr/local/bin/tessera');
  expect(dockerfile).toMatch(/^ENTRYPOINT \["tessera"\]$/m);

  const scratch = await mkdtemp(join(tmpdir(), 'tessera-runtime-'));
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', TMPDIR: scratch };
  const proc = spawn(bin, ['server', '-dev', '-dev-listen-address', '127.0.0.1:0'], { cwd: scratch, env, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let out = '';
    await new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        if (/Root Token: \S+/.test(out)) resolve();
      });
      proc.once('exit', (code) => reject(new Error(`the server exited (${code}) before its banner: ${out}`)));
    });
    // env(1) execs node in place: the process spawned is the server.
    const argv = (await readFile(`/proc/${proc.pid}/cmdline`, 'utf8')).split('\0');
    expect(argv.slice(0, 1 + RUNTIME_NODE_ARGS.length)).toEqual(['node', ...RUNTIME_NODE_ARGS]);
    const environ = (await readFile(`/proc/${proc.pid}/environ`, 'utf8')).split('\0');
    for (const a of assignments) expect(environ).toContain(a);
  } finally {
    proc.kill('SIGKILL');
    await new Promise((resolve) => (proc.exitCode !== null || proc.signalCode !== null ? resolve(undefined) : proc.once('exit', resolve)));
    await rm(scratch, { recursive: true, force: true });
  }
});
