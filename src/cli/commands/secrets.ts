/**
 * `tessera secrets enable|disable|list`: mounts and unmounts secrets engines, as the vault CLI's
 * `secrets` commands. `enable -version=2 kv` (or `enable kv-v2`) mounts KV v2; the path defaults
 * to the engine type, as in Vault.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { UsageError } from '../errors.js';
import { Format, columns, json, printWarnings } from '../output.js';
import { parseNonNegativeInt } from './kv-get.js';

interface EnableFlags extends ClientFlags {
  readonly path?: string;
  readonly description?: string;
  readonly local?: boolean;
  readonly version?: number;
  readonly defaultLeaseTtl?: string;
  readonly maxLeaseTtl?: string;
  readonly options?: string[];
}

const slashed = (p: string): string => `${p.replace(/^\/+|\/+$/g, '')}/`;

export function register(parent: Command, ctx: Context): void {
  const secrets = parent.command('secrets').description('Enable, disable and list secrets engines');

  const enable = secrets
    .command('enable')
    .description('Enable a secrets engine at a path')
    .argument('<type>', 'engine type: kv, kv-v2 or transit')
    .option('--path <path>', 'where to mount it (default: the type)')
    .option('--description <text>', 'human-friendly description')
    .option('--local', 'a local mount: not replicated to performance secondaries')
    .option('--version <n>', 'engine version (kv: 1 or 2)', parseNonNegativeInt)
    .option('--default-lease-ttl <duration>', 'default lease TTL of the mount')
    .option('--max-lease-ttl <duration>', 'maximum lease TTL of the mount')
    .option('--options <key=value>', 'engine option; repeat for more', (v: string, all: string[] = []) => [...all, v]);
  withClientFlags(enable);
  example(enable, 'tessera secrets enable -version=2 -path=secret kv', 'tessera secrets enable -path=app -description="app secrets" kv-v2');
  enable.action(
    ctx.action(async (type: string, opts: EnableFlags) => {
      const path = slashed(opts.path ?? type);
      try {
        const options: Record<string, string> = {};
        for (const pair of opts.options ?? []) {
          const eq = pair.indexOf('=');
          if (eq <= 0) throw new UsageError(`-options expects key=value, got "${pair}"`);
          options[pair.slice(0, eq)] = pair.slice(eq + 1);
        }
        if (opts.version !== undefined) options['version'] = String(opts.version);
        const config = {
          ...(opts.defaultLeaseTtl !== undefined ? { default_lease_ttl: opts.defaultLeaseTtl } : {}),
          ...(opts.maxLeaseTtl !== undefined ? { max_lease_ttl: opts.maxLeaseTtl } : {}),
        };
        const env = await ctx.client(opts).write(`sys/mounts/${path}`, {
          type,
          ...(opts.description !== undefined ? { description: opts.description } : {}),
          ...(opts.local ? { local: true } : {}),
          ...(Object.keys(options).length > 0 ? { options } : {}),
          ...(Object.keys(config).length > 0 ? { config } : {}),
        });
        printWarnings(ctx.io.stderr, env?.warnings);
        ctx.out(`Success! Enabled the ${type} secrets engine at: ${path}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`enabling the ${type} secrets engine at ${path}`, e);
      }
    }),
  );

  const disable = secrets.command('disable').description('Disable the secrets engine at a path, deleting its data').argument('<path>', 'the mount path');
  withClientFlags(disable);
  example(disable, 'tessera secrets disable old-app/');
  disable.action(
    ctx.action(async (raw: string, opts: ClientFlags) => {
      const path = slashed(raw);
      try {
        const env = await ctx.client(opts).delete(`sys/mounts/${path}`);
        printWarnings(ctx.io.stderr, env?.warnings);
        ctx.out(`Success! Disabled the secrets engine (if it existed) at: ${path}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`disabling the secrets engine at ${path}`, e);
      }
    }),
  );

  const list = secrets.command('list').description('List the enabled secrets engines').option('--detailed', 'also show options, locality and the version');
  withFormatFlags(withClientFlags(list), false);
  example(list, 'tessera secrets list', 'tessera secrets list -detailed -format=json');
  list.action(
    ctx.action(async (opts: ClientFlags & FormatFlags & { detailed?: boolean }) => {
      try {
        const mounts = await ctx.client(opts).sys.mounts();
        if (opts.format === Format.json) {
          ctx.out(json(mounts));
          return 0;
        }
        const paths = Object.keys(mounts).sort();
        const cells = paths.map((p) => {
          const m = mounts[p]!;
          const base = [p, m.type, String(m['accessor'] ?? ''), m.description ?? ''];
          return opts.detailed ? [...base, String(m.local ?? false), m.options?.['version'] ?? 'n/a'] : base;
        });
        const header = opts.detailed ? ['Path', 'Type', 'Accessor', 'Description', 'Local', 'Version'] : ['Path', 'Type', 'Accessor', 'Description'];
        ctx.out(columns(header, cells));
        return 0;
      } catch (e) {
        return ctx.fail('listing secrets engines', e);
      }
    }),
  );
}
