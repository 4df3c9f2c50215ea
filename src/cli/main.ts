/**
 * The `tessera` command line. `main` takes the arguments after the program name and the injected
 * io, and resolves to the exit code: 0 success, 1 error, 2 usage error (or "sealed" / "no value",
 * as Vault's CLI). Run directly (bin/tessera.js) it uses the process's streams and exits.
 *
 *   const code = await main(['kv', 'get', 'secret/app'], { stdout, stderr, stdin, env: process.env });
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';
import { Command, CommanderError } from 'commander';
import { VERSION } from '../core/index.js';
import { normaliseArgv } from './argv.js';
import { Context } from './context.js';
import type { CliIo } from './io.js';
import { register as registerDelete } from './commands/delete.js';
import { register as registerKv } from './commands/kv.js';
import { register as registerLicense } from './commands/license.js';
import { register as registerList } from './commands/list.js';
import { register as registerLogin } from './commands/login.js';
import { register as registerOperator } from './commands/operator.js';
import { register as registerPathHelp } from './commands/path-help.js';
import { register as registerRead } from './commands/read.js';
import { register as registerSecrets } from './commands/secrets.js';
import { register as registerAudit } from './commands/audit.js';
import { register as registerServer } from './commands/server.js';
import { register as registerStatus } from './commands/status.js';
import { register as registerToken } from './commands/token.js';
import { register as registerVersion } from './commands/version.js';
import { register as registerWrite } from './commands/write.js';

export type { CliIo } from './io.js';

/** A fresh program per run: commander keeps parsed values on its objects. */
function program(ctx: Context): Command {
  const root = new Command('tessera')
    .description('Tessera: a Vault-compatible secrets node with DR and performance replication')
    .version(VERSION, '--cli-version', 'print the CLI version')
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.out(s),
      writeErr: (s) => ctx.err(s),
      getOutHelpWidth: () => ctx.io.stdout.columns ?? 100,
      getErrHelpWidth: () => ctx.io.stderr.columns ?? 100,
    })
    .showHelpAfterError('(add --help for usage)')
    .showSuggestionAfterError(true)
    .addHelpText(
      'after',
      '\nSingle-dash long flags work as in Vault (-format=json equals --format=json).\n' +
        'Environment: TESSERA_ADDR, TESSERA_TOKEN, TESSERA_NAMESPACE, TESSERA_CACERT, TESSERA_CAPATH, TESSERA_SKIP_VERIFY,\n' +
        'TESSERA_WRAP_TTL (else the VAULT_* names); the token falls back to ~/.vault-token (written by `tessera login`).\n',
    );
  for (const register of [
    registerServer,
    registerOperator,
    registerStatus,
    registerRead,
    registerWrite,
    registerDelete,
    registerList,
    registerKv,
    registerSecrets,
    registerAudit,
    registerLogin,
    registerPathHelp,
    registerLicense,
    registerToken,
    registerVersion,
  ]) {
    register(root, ctx);
  }
  return root;
}

const helpCodes: ReadonlySet<string> = new Set(['commander.helpDisplayed', 'commander.version']);

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const ctx = new Context(io);
  try {
    await program(ctx).parseAsync(normaliseArgv(argv), { from: 'user' });
    return ctx.exitCode;
  } catch (e) {
    // Commander has already printed its message; only the exit code is left to choose.
    if (e instanceof CommanderError) return helpCodes.has(e.code) ? 0 : 2;
    throw e;
  }
}

/** True when this module is the process's entry point, directly or through bin/tessera.js. */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  const self = fileURLToPath(import.meta.url);
  const bin = resolve(dirname(self), '../../bin/tessera.js');
  try {
    const real = realpathSync(script);
    return real === self || real === bin;
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  // `tessera ... | head` closes the pipe early: that is the reader's choice, not an error.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw e;
    });
  }
  const code = await main(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
  });
  process.exitCode = code;
}
