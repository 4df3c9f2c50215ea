/**
 * `tessera kv get [-mount=M] [-version=N] PATH`: reads a KV secret. On v2 it prints the metadata
 * and data sections; `-field` picks from the secret's data.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { Envelope } from '../../api/index.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { Format, json, printField, printSecret, printWarnings, renderValue, table } from '../output.js';
import { isEmptyNotFound, noValue } from './read.js';
import { dataPath, resolveKv } from './kv-mount.js';

interface KvGetFlags extends ClientFlags, FormatFlags {
  readonly mount?: string;
  readonly version?: number;
}

export function parseNonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('expected a whole number');
  return n;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('get')
    .description('Read a secret from a KV mount (v1 or v2)')
    .argument('<path>', 'MOUNT/PATH, or PATH with -mount')
    .option('--mount <mount>', 'the KV mount; otherwise the path starts with it')
    .option('--version <n>', 'v2 only: the version to read', parseNonNegativeInt);
  withFormatFlags(withClientFlags(cmd));
  example(cmd, 'tessera kv get -mount=secret app/db', 'tessera kv get -version=2 -field=password secret/app/db');
  cmd.action(
    ctx.action(async (path: string, opts: KvGetFlags) => {
      const client = ctx.client(opts);
      let target = path;
      try {
        const kv = await resolveKv(client, path, opts.mount);
        target = dataPath(kv);
        const query = kv.version === 2 && opts.version !== undefined ? { version: opts.version } : undefined;
        const env = await client.read(target, query);
        if (env === null) return noValue(ctx, target);
        if (kv.version === 1 || env.wrap_info) return printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
        return printV2(ctx, env, opts, target);
      } catch (e) {
        if (isEmptyNotFound(e)) return noValue(ctx, target);
        return ctx.fail(`reading ${target}`, e);
      }
    }),
  );
}

function printV2(ctx: Context, env: Envelope, opts: KvGetFlags, target: string): number {
  const data = asRecord(env.data?.['data']);
  const metadata = asRecord(env.data?.['metadata']);
  if (opts.field !== undefined) {
    return printField(ctx.io.stdout, ctx.io.stderr, new Map(Object.entries(data ?? {})), opts.field);
  }
  if (opts.format === Format.json) {
    ctx.out(json(env));
    return 0;
  }
  printWarnings(ctx.io.stderr, env.warnings);
  ctx.out(`== Secret Path ==\n${target}\n\n`);
  if (metadata) ctx.out(`======= Metadata =======\n${rowsOf(metadata)}`);
  if (!data) {
    ctx.err(`No value found at ${target}\n`);
    return 2;
  }
  ctx.out(`${metadata ? '\n' : ''}====== Data ======\n${rowsOf(data)}`);
  return 0;
}

function rowsOf(record: Record<string, unknown>): string {
  const rows = Object.keys(record)
    .sort()
    .map((k) => [k, renderValue(record[k])] as const);
  return table(rows, ['Key', 'Value']);
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
