#!/usr/bin/env node
/**
 * `npm test` after lint and build: the compose test (scripts/compose-test.mjs, several minutes,
 * mostly waiting on docker) in the background with its output in compose-test.log, the jest suite
 * in the foreground; then waits for both. Exit 1 when either failed; the compose test's log is
 * printed when it failed. Arguments go to jest.
 *
 *   node scripts/test-all.mjs                  # what npm test runs
 *   node scripts/test-all.mjs test/e2e         # a part of the jest suite, and the compose test
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));
const composeLog = join(repo, 'compose-test.log');

const exitOf = (child) =>
  new Promise((resolve) => {
    child.once('error', () => resolve(1));
    child.once('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });

const fd = openSync(composeLog, 'w');
const compose = spawn(process.execPath, [join(repo, 'scripts/compose-test.mjs')], { cwd: repo, stdio: ['ignore', fd, fd] });
closeSync(fd);
console.log(`test-all: the compose test runs in the background (pid ${compose.pid}), output in ${composeLog}`);
const composeExit = exitOf(compose);

// The compose test tears its cluster down on SIGTERM; a terminal's Ctrl-C reaches both children.
process.once('SIGTERM', () => compose.kill('SIGTERM'));

const jest = spawn(process.execPath, ['--experimental-vm-modules', join(repo, 'node_modules/jest/bin/jest.js'), ...process.argv.slice(2)], { cwd: repo, stdio: 'inherit' });
const jestCode = await exitOf(jest);

if (compose.exitCode === null && compose.signalCode === null) console.log('test-all: jest is done; waiting for the compose test');
const composeCode = await composeExit;
if (composeCode !== 0) {
  const text = readFileSync(composeLog, 'utf8');
  console.log(`test-all: the compose test FAILED (exit ${composeCode}); ${composeLog}:\n${text}`);
  // Its own step lines once more, without the containers' logs: a CI that shows only the end shows these.
  const steps = text.split('\n').filter((l) => l.startsWith('[compose-test'));
  console.log(`test-all: the compose test's steps:\n${steps.slice(-30).join('\n')}`);
}
else console.log(`test-all: compose test: ${readFileSync(composeLog, 'utf8').trim().split('\n').pop()}`);
console.log(`test-all: jest ${jestCode === 0 ? 'passed' : `FAILED (exit ${jestCode})`}, compose test ${composeCode === 0 ? 'passed' : 'FAILED'}`);
process.exit(jestCode !== 0 || composeCode !== 0 ? 1 : 0);
