/**
 * `tessera audit enable|disable|list`: audit devices, as the vault CLI's `audit` commands.
 * `enable [-path=] [-description=] [-local] file file_path=...`: options as key=value after the
 * type; the path defaults to the type.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { UsageError } from '../errors.js';
import { Format, columns, json } from '../output.js';

interface EnableFlags extends ClientFlags {
  readonly path?: string;
  readonly description?: string;
  readonly local?: boolean;
}

const slashed = (p: string): string => `${p.replace(/^\/+|\/+$/g, '')}/`;

export function register(parent: Command, ctx: Context): void {
  const audit = parent.command('audit').description('Enable, disable and list audit devices');

  const enable = audit
    .command('enable')
    .description('Enable an audit device')
    .argument('<type>', 'device type: file')
    .argument('[options...]', 'device options as key=value (file_path=..., log_raw=true, ...)')
    .option('--path <path>', 'where to enable it (default: the type)')
    .option('--description <text>', 'human-friendly description')
    .option('--local', 'a local device: not replicated to performance secondaries');
  withClientFlags(enable);
  example(enable, 'tessera audit enable file file_path=vault-audit.log', 'tessera audit enable -path=raw file file_path=raw.log log_raw=true');
  enable.action(
    ctx.action(async (type: string, pairs: string[], opts: EnableFlags) => {
      const path = slashed(opts.path ?? type);
      try {
        const options: Record<string, string> = {};
        for (const pair of pairs) {
          const eq = pair.indexOf('=');
          if (eq <= 0) throw new UsageError(`options are key=value, got "${pair}"`);
          options[pair.slice(0, eq)] = pair.slice(eq + 1);
        }
        await ctx.client(opts).sys.enableAudit(path, {
          type,
          ...(opts.description !== undefined ? { description: opts.description } : {}),
          ...(opts.local ? { local: true } : {}),
          options,
        });
        ctx.out(`Success! Enabled the ${type} audit device at: ${path}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`enabling the ${type} audit device at ${path}`, e);
      }
    }),
  );

  const disable = audit.command('disable').description('Disable the audit device at a path').argument('<path>', 'the device path');
  withClientFlags(disable);
  example(disable, 'tessera audit disable file/');
  disable.action(
    ctx.action(async (raw: string, opts: ClientFlags) => {
      const path = slashed(raw);
      try {
        await ctx.client(opts).sys.disableAudit(path);
        ctx.out(`Success! Disabled audit device (if it was enabled) at: ${path}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`disabling the audit device at ${path}`, e);
      }
    }),
  );

  const list = audit.command('list').description('List the enabled audit devices').option('--detailed', 'also show replication and options');
  withFormatFlags(withClientFlags(list), false);
  example(list, 'tessera audit list', 'tessera audit list -detailed');
  list.action(
    ctx.action(async (opts: ClientFlags & FormatFlags & { detailed?: boolean }) => {
      try {
        const devices = await ctx.client(opts).sys.auditDevices();
        if (opts.format === Format.json) {
          ctx.out(json(devices));
          return 0;
        }
        const paths = Object.keys(devices).sort();
        if (paths.length === 0) {
          ctx.out('No audit devices are enabled.\n');
          return 0;
        }
        const cells = paths.map((p) => {
          const d = devices[p]!;
          const base = [p, d.type, d.description];
          if (!opts.detailed) return base;
          const options = Object.entries(d.options ?? {}).map(([k, v]) => `${k}:${v}`).join(' ');
          return [...base, d.local ? 'local' : 'replicated', `map[${options}]`];
        });
        ctx.out(columns(opts.detailed ? ['Path', 'Type', 'Description', 'Replication', 'Options'] : ['Path', 'Type', 'Description'], cells));
        return 0;
      } catch (e) {
        return ctx.fail('listing audit devices', e);
      }
    }),
  );
}
