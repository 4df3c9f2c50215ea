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
import { connectionOptions } from './connection.js';
import type { ClientFlags } from './connection.js';

export { DEFAULT_ADDR, fromEnv } from './connection.js';
export type { ClientFlags } from './connection.js';

export interface FormatFlags {
  readonly format: Format;
  readonly field?: string;
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

  /**
   * Flags win over TESSERA_* which win over VAULT_*; the address defaults to 127.0.0.1:8200 and
   * the token falls back to ~/.vault-token (connection.ts). Throws UsageError for unreadable CA files.
   */
  client(flags: ClientFlags = {}): TesseraClient {
    return new TesseraClient({ ...connectionOptions(flags, this.io.env), fetchImpl: this.io.fetchImpl });
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

/** The HTTP options of the vault CLI, for every command that talks to a node. */
export function withClientFlags(cmd: Command): Command {
  return cmd
    .option('--address <addr>', 'node address (env TESSERA_ADDR, then VAULT_ADDR)')
    .option('--namespace <ns>', 'namespace (env TESSERA_NAMESPACE, then VAULT_NAMESPACE)')
    .option('--ca-cert <file>', 'PEM CA certificate to verify the node with (env TESSERA_CACERT, then VAULT_CACERT)')
    .option('--ca-path <dir>', 'directory of PEM CA certificates (env TESSERA_CAPATH, then VAULT_CAPATH)')
    .option('--tls-skip-verify', 'do not verify the node certificate; insecure (env TESSERA_SKIP_VERIFY, then VAULT_SKIP_VERIFY)')
    .option('--wrap-ttl <duration>', 'wrap the answer in a response-wrapping token with this TTL (X-Vault-Wrap-TTL)');
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
