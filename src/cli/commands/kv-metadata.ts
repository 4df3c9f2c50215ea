/**
 * `tessera kv metadata get|put|delete [-mount=M] PATH`: a KV v2 secret's metadata. `put` sets
 * max versions, cas-required, delete-version-after and custom metadata; `delete` removes the
 * secret with every version and its metadata.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { UsageError } from '../errors.js';
import { printSecret, printWarnings } from '../output.js';
import { parseNonNegativeInt } from './kv-get.js';
import { requireV2, resolveKv, v2Path } from './kv-mount.js';
import type { KvTarget } from './kv-mount.js';
import type { TesseraClient } from '../../api/index.js';
import { isEmptyNotFound, noValue } from './read.js';

interface MountFlag extends ClientFlags {
  readonly mount?: string;
}

interface PutFlags extends MountFlag {
  readonly maxVersions?: number;
  readonly casRequired?: string;
  readonly deleteVersionAfter?: string;
  readonly customMetadata?: string[];
}

async function metadataTarget(client: TesseraClient, path: string, mount: string | undefined, command: string): Promise<{ kv: KvTarget; target: string }> {
  const kv = await resolveKv(client, path, mount);
  requireV2(kv, `metadata ${command}`);
  return { kv, target: v2Path(kv, 'metadata') };
}

export function register(parent: Command, ctx: Context): void {
  const metadata = parent.command('metadata').description('Read, set and delete the metadata of KV v2 secrets');

  const get = metadata.command('get').description('Print a secret\'s metadata and versions').argument('<path>', 'MOUNT/PATH, or PATH with -mount').option('--mount <mount>', 'the KV mount');
  withFormatFlags(withClientFlags(get));
  example(get, 'tessera kv metadata get secret/app/db');
  get.action(
    ctx.action(async (path: string, opts: MountFlag & FormatFlags) => {
      const client = ctx.client(opts);
      let target = path;
      try {
        ({ target } = await metadataTarget(client, path, opts.mount, 'get'));
        const env = await client.read(target);
        if (env === null) return noValue(ctx, target);
        return printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
      } catch (e) {
        if (isEmptyNotFound(e)) return noValue(ctx, target);
        return ctx.fail(`reading ${target}`, e);
      }
    }),
  );

  const put = metadata
    .command('put')
    .description('Set a secret\'s metadata (creates it when absent)')
    .argument('<path>', 'MOUNT/PATH, or PATH with -mount')
    .option('--mount <mount>', 'the KV mount')
    .option('--max-versions <n>', 'versions to keep (0: the mount\'s setting)', parseNonNegativeInt)
    .option('--cas-required <bool>', 'require -cas on every write (true/false)')
    .option('--delete-version-after <duration>', 'delete versions this long after they are written ("0s": never)')
    .option('--custom-metadata <key=value>', 'custom metadata; repeat for more keys', (v: string, all: string[] = []) => [...all, v]);
  withClientFlags(put);
  example(put, 'tessera kv metadata put -max-versions=5 -custom-metadata=owner=ops secret/app/db');
  put.action(
    ctx.action(async (path: string, opts: PutFlags) => {
      const client = ctx.client(opts);
      let target = path;
      try {
        const body: Record<string, unknown> = {};
        if (opts.maxVersions !== undefined) body['max_versions'] = opts.maxVersions;
        if (opts.casRequired !== undefined) body['cas_required'] = opts.casRequired;
        if (opts.deleteVersionAfter !== undefined) body['delete_version_after'] = opts.deleteVersionAfter;
        if (opts.customMetadata !== undefined) body['custom_metadata'] = customMetadata(opts.customMetadata);
        if (Object.keys(body).length === 0) throw new UsageError('nothing to set: give -max-versions, -cas-required, -delete-version-after or -custom-metadata');
        ({ target } = await metadataTarget(client, path, opts.mount, 'put'));
        const env = await client.write(target, body);
        printWarnings(ctx.io.stderr, env?.warnings);
        ctx.out(`Success! Data written to: ${target}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`writing ${target}`, e);
      }
    }),
  );

  const del = metadata.command('delete').description('Delete a secret with all its versions and metadata').argument('<path>', 'MOUNT/PATH, or PATH with -mount').option('--mount <mount>', 'the KV mount');
  withClientFlags(del);
  example(del, 'tessera kv metadata delete secret/app/db');
  del.action(
    ctx.action(async (path: string, opts: MountFlag) => {
      const client = ctx.client(opts);
      let target = path;
      try {
        ({ target } = await metadataTarget(client, path, opts.mount, 'delete'));
        const env = await client.delete(target);
        printWarnings(ctx.io.stderr, env?.warnings);
        ctx.out(`Success! Data deleted (if it existed) at: ${target}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`deleting ${target}`, e);
      }
    }),
  );
}

function customMetadata(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`-custom-metadata expects key=value, got "${pair}"`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}
