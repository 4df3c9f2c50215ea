/**
 * Builds a request body from `key=value` arguments as the `vault` CLI does: every value is sent
 * as a string (the server coerces "3", "true", "30m"), `key=@file` sends a file's contents,
 * `key=-` sends stdin, a repeated key sends a list, and a lone `-` reads a whole JSON object from
 * stdin.
 *
 *   await parseKeyValues(['ttl=30m', 'cert=@ca.pem'], io.stdin) // { ttl: '30m', cert: '-----BEGIN...' }
 */
import { readFile } from 'node:fs/promises';
import type { Input } from './io.js';
import { readAll } from './io.js';
import { InvalidRequest } from '../core/index.js';
import { UsageError } from './errors.js';

export async function parseKeyValues(args: readonly string[], stdin: Input): Promise<Record<string, unknown>> {
  if (args.length === 1 && args[0] === '-') return readJsonObject(stdin);

  let stdinUsed = false;
  const body: Record<string, unknown> = {};
  for (const arg of args) {
    const eq = arg.indexOf('=');
    if (eq <= 0) throw new UsageError(`expected key=value, got "${arg}"`);
    const key = arg.slice(0, eq);
    const raw = arg.slice(eq + 1);
    let value: string;
    if (raw === '-') {
      // stdin can be consumed only once.
      if (stdinUsed) throw new UsageError('stdin (-) may be used for only one value');
      stdinUsed = true;
      value = await readAll(stdin);
    } else if (raw.startsWith('@')) {
      value = await readValueFile(raw.slice(1));
    } else {
      value = raw;
    }
    const existing = body[key];
    if (existing === undefined) body[key] = value;
    else body[key] = Array.isArray(existing) ? [...(existing as unknown[]), value] : [existing, value];
  }
  return body;
}

async function readValueFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    const reason = (e as { code?: unknown }).code ?? (e as { message?: unknown }).message;
    throw new InvalidRequest(`cannot read "${path}": ${String(reason)}`);
  }
}

async function readJsonObject(stdin: Input): Promise<Record<string, unknown>> {
  const text = await readAll(stdin);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`stdin is not valid JSON: ${(e as { message?: unknown }).message as string}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError('stdin must hold a JSON object');
  }
  return parsed as Record<string, unknown>;
}
