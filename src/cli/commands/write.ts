/**
 * `tessera write PATH k=v ...`: POSTs a JSON body built from the arguments (all values strings,
 * `k=@file`, `k=-` for stdin, or a lone `-` for a JSON object on stdin) and prints the answer.
 * Under sys/replication/ an empty value is refused (replication-guard.ts); `-clear-primary` is
 * the explicit way to make a secondary forget its primary. Warnings go to stderr.
 * `-wait` on .../secondary/{enable,update-primary,promote} then polls the kind's status until the
 * node streams (`stream-wals`) or runs as primary, showing state and lag on stderr (wait.ts).
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { parseKeyValues } from '../kvpairs.js';
import { Format, onlyWarnings, printSecret, printWarnings } from '../output.js';
import { guardReplicationBody } from '../replication-guard.js';
import { UsageError } from '../errors.js';
import { statusDisplay } from '../progress.js';
import { timeoutMs, waitForRole, waitTargetFor } from '../wait.js';

interface WriteFlags extends ClientFlags, FormatFlags {
  readonly clearPrimary?: boolean;
  readonly wait?: boolean;
  readonly waitTimeout: string;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('write')
    .description('Write data to a path')
    .argument('<path>', 'path to write, without /v1/')
    .argument('[data...]', 'key=value pairs; key=@file reads a file, key=- reads stdin, a lone - reads a JSON object from stdin')
    .option('-f, --force', 'allow a write with no data (as `vault write -f`)')
    .option('--clear-primary', 'with .../secondary/update-primary: send an empty token, so the secondary forgets its primary')
    .option('--wait', 'with sys/replication/{dr,performance}/secondary/{enable,update-primary,promote}: wait until the node streams (stream-wals) or runs as primary, showing state and lag')
    .option('--wait-timeout <duration>', 'how long -wait waits before failing (exit 1)', '5m');
  withFormatFlags(withClientFlags(cmd));
  example(
    cmd,
    'tessera write -f sys/replication/dr/primary/enable',
    'tessera write sys/replication/dr/primary/secondary-token id=dr-east ttl=30m',
    'tessera write secret/app password=@pw.txt',
    'echo \'{"policy": "path \\"secret/*\\" { capabilities = [\\"read\\"] }"}\' | tessera write sys/policies/acl/reader -',
    'tessera write sys/replication/dr/secondary/update-primary dr_operation_token="$DRT" -clear-primary',
    'tessera write -wait sys/replication/dr/secondary/promote dr_operation_token="$DRT"',
  );
  cmd.action(
    ctx.action(async (path: string, data: string[], opts: WriteFlags) => {
      try {
        const body = guardReplicationBody(path, await parseKeyValues(data, ctx.io.stdin), opts.clearPrimary ?? false);
        // Checked before anything is sent: a -wait that cannot apply must not follow a real write.
        const wait = opts.wait ? waitTargetFor(path, body) : undefined;
        if (opts.wait && wait === undefined) throw new UsageError('-wait goes only with sys/replication/{dr,performance}/secondary/{enable,update-primary,promote}');
        const waitMs = timeoutMs('-wait-timeout', opts.waitTimeout);
        const client = ctx.client(opts);
        const env = await client.write(path, body);
        const plain = opts.format === Format.table && opts.field === undefined;
        let code = 0;
        if (env === null || (plain && onlyWarnings(env))) {
          printWarnings(ctx.io.stderr, env?.warnings);
          if (plain) ctx.out(`Success! Data written to: ${path}\n`);
        } else {
          code = printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
        }
        if (wait === undefined || code !== 0) return code;
        const display = statusDisplay(ctx.io.stderr);
        try {
          await waitForRole(client, wait.kind, wait.target, { timeoutMs: waitMs, intervalMs: ctx.io.pollIntervalMs ?? 500, display, label: wait.kind });
        } finally {
          display.stop();
        }
        ctx.err(`Done: ${wait.kind} ${wait.target.goal === 'running' ? 'primary running' : 'secondary streaming (stream-wals)'}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`writing ${path}`, e);
      }
    }),
  );
}
