/**
 * Runs one of the python3-hvac scripts in test/e2e/hvac/ against a node and returns the JSON
 * object it prints. Debian installs hvac for the system interpreter, hence /usr/bin/python3
 * (TESSERA_HVAC_PYTHON overrides it); a failing script's traceback becomes the thrown error.
 *
 *   const seen = await runHvac('drive.py', node.apiAddr);
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const PYTHON = process.env.TESSERA_HVAC_PYTHON ?? '/usr/bin/python3';

export async function runHvac(script: string, apiAddr: string, timeoutMs = 45_000, args: readonly string[] = []): Promise<Record<string, unknown>> {
  const path = fileURLToPath(new URL(`../e2e/hvac/${script}`, import.meta.url));
  try {
    const { stdout } = await run(PYTHON, [path, apiAddr, ...args], { timeout: timeoutMs });
    return JSON.parse(stdout) as Record<string, unknown>;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`hvac script ${script} failed: ${err.stderr || err.message}`);
  }
}
