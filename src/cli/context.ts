/**
 * Per-run state shared by the commands: the injected io, the exit code of the command that ran,
 * client construction from flags and environment, and Vault-style error reporting.
 *
 *   cmd.action(ctx.action(async (path: string, opts: ClientFlags) => {
 *     try { ...; return 0; } catch (e) { return ctx.fail(`reading ${path}`, e); }
 *   }));
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { ApiError, TesseraClient } from '../api/index.js';
import type { CliIo } from './io.js';
import { UsageError } from './errors.js';
import { formats } from './output.js';
import type { Format } from './output.js';

export const DEFAULT_ADDR = 'http://127.0.0.1:8200';

export interface ClientFlags {
  readonly address?: string;
  readonly namespace?: string;
}

export interface FormatFlags {
  readonly format: Format;
  readonly field?: string;
}

/** TESSERA_<name>, else VAULT_<name>; an empty value counts as unset. */
export function fromEnv(env: CliIo['env'], name: string): string | undefined {
  return env[`TESSERA_${name}`] || env[`VAULT_${name}`] || undefined;
}

export class Context {
  readonly io: CliIo;
  /** Set by the action that ran; stays 0 when commander only printed help. */
  exitCode = 0;

  constructor(io: CliIo) {
    this.io = io;
  }

  out(text: string): void {
    this.io.stdout.write(text);
  }

  err(text: string): void {
    this.io.stderr.write(text);
  }

  /** Flags win over TESSERA_* which win over VAULT_*; the address defaults to 127.0.0.1:8200. */
  client(flags: ClientFlags = {}): TesseraClient {
    const env = this.io.env;
    return new TesseraClient({
      addr: flags.address ?? fromEnv(env, 'ADDR') ?? DEFAULT_ADDR,
      token: fromEnv(env, 'TOKEN'),
      namespace: flags.namespace ?? fromEnv(env, 'NAMESPACE'),
      fetchImpl: this.io.fetchImpl,
    });
  }

  /** Prints "Error <what>: ..." on stderr; returns 2 for a usage error, else 1. */
  fail(what: string, e: unknown): number {
    this.err(`Error ${what}: ${describe(e)}\n`);
    return e instanceof UsageError ? 2 : 1;
  }

  /** Adapts an action returning an exit code to commander; an escaped error exits 1 (2 for usage). */
  action<A extends unknown[]>(fn: (...args: A) => Promise<number>): (...args: A) => Promise<void> {
    return async (...args: A) => {
      try {
        this.exitCode = await fn(...args);
      } catch (e) {
        this.err(`Error: ${describe(e)}\n`);
        this.exitCode = e instanceof UsageError ? 2 : 1;
      }
    };
  }
}

/** Vault's layout for API errors (URL, code, one bullet per error); the message otherwise. */
export function describe(e: unknown): string {
  if (e instanceof ApiError) {
    const bullets = e.errors.length > 0 ? e.errors.map((m) => `* ${m}`).join('\n') : '* (no error messages)';
    return `Error making API request.\n\nURL: ${e.method} ${e.url}\nCode: ${e.status}. Errors:\n\n${bullets}`;
  }
  const message = typeof e === 'object' && e !== null ? (e as { message?: unknown }).message : undefined;
  return typeof message === 'string' ? message : String(e);
}

/** `-address` and `-namespace`, for every command that talks to a node. */
export function withClientFlags(cmd: Command): Command {
  return cmd
    .option('--address <addr>', 'node address (env TESSERA_ADDR, then VAULT_ADDR)')
    .option('--namespace <ns>', 'namespace (env TESSERA_NAMESPACE, then VAULT_NAMESPACE)');
}

/** `-format=json|table` and, when the command prints secrets, `-field=NAME`. */
export function withFormatFlags(cmd: Command, field = true): Command {
  cmd.addOption(new Option('--format <format>', 'output format').choices(formats).default('table'));
  if (field) cmd.option('--field <name>', 'print only this field, raw');
  return cmd;
}

/** The help text's example section. */
export function example(cmd: Command, ...lines: string[]): Command {
  return cmd.addHelpText('after', `\nExample:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
}
