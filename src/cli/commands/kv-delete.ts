/**
 * `tessera kv delete [-mount=M] [-versions=1,2] PATH`: on v2 soft-deletes the latest version (or
 * the listed versions, through delete/); on v1 deletes the secret.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { Context, ClientFlags } from '../context.js';
import { example, withClientFlags } from '../context.js';
import { printWarnings } from '../output.js';
import { dataPath, requireV2, resolveKv, v2Path } from './kv-mount.js';

interface KvDeleteFlags extends ClientFlags {
  readonly mount?: string;
  readonly versions?: number[];
}

export function parseVersions(value: string): number[] {
  const parts = value.split(',').map((s) => s.trim());
  if (parts.some((p) => !/^\d+$/.test(p) || Number(p) < 1)) throw new InvalidArgumentError('expected version numbers such as 1,2,3');
  return parts.map(Number);
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('delete')
    .description('Delete a KV secret (v2: soft-delete its latest version, or -versions)')
    .argument('<path>', 'MOUNT/PATH, or PATH with -mount')
    .option('--mount <mount>', 'the KV mount; otherwise the path starts with it')
    .option('--versions <list>', 'v2 only: comma-separated versions to delete', parseVersions);
  withClientFlags(cmd);
  example(cmd, 'tessera kv delete secret/app/db', 'tessera kv delete -versions=1,2 -mount=secret app/db');
  cmd.action(
    ctx.action(async (path: string, opts: KvDeleteFlags) => {
      const client = ctx.client(opts);
      let target = path;
      try {
        const kv = await resolveKv(client, path, opts.mount);
        let env;
        if (opts.versions !== undefined) {
          requireV2(kv, 'delete -versions');
          target = v2Path(kv, 'delete');
          env = await client.write(target, { versions: opts.versions });
        } else {
          target = dataPath(kv);
          env = await client.delete(target);
        }
        printWarnings(ctx.io.stderr, env?.warnings);
        ctx.out(`Success! Data deleted (if it existed) at: ${target}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`deleting ${target}`, e);
      }
    }),
  );
}
