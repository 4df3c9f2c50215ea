/**
 * `tessera operator init [-key-shares N] [-key-threshold T]`: initialises a node and prints the
 * unseal keys and the initial root token. They are shown once; the node keeps no copy.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { InitResponse } from '../../api/index.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { UsageError } from '../errors.js';
import { Format, json } from '../output.js';

interface InitFlags extends ClientFlags, FormatFlags {
  readonly keyShares: number;
  readonly keyThreshold: number;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('init')
    .description('Initialise a node: generate the root key and split it into unseal key shares')
    .option('--key-shares <n>', 'number of unseal key shares', positiveInt, 5)
    .option('--key-threshold <t>', 'shares needed to unseal', positiveInt, 3);
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera operator init -key-shares=1 -key-threshold=1 -format=json');
  cmd.action(
    ctx.action(async (opts: InitFlags) => {
      try {
        if (opts.keyThreshold > opts.keyShares) {
          throw new UsageError(`-key-threshold (${opts.keyThreshold}) exceeds -key-shares (${opts.keyShares})`);
        }
        const res = await ctx.client(opts).sys.init({ secret_shares: opts.keyShares, secret_threshold: opts.keyThreshold });
        ctx.out(opts.format === Format.json ? json(asVaultJson(res, opts)) : asText(res, opts));
        return 0;
      } catch (e) {
        return ctx.fail('initializing', e);
      }
    }),
  );
}

/** The JSON `vault operator init -format=json` prints, which scripts already parse. */
function asVaultJson(res: InitResponse, opts: InitFlags): Record<string, unknown> {
  return {
    unseal_keys_b64: res.keys_base64,
    unseal_keys_hex: res.keys,
    unseal_shares: opts.keyShares,
    unseal_threshold: opts.keyThreshold,
    recovery_keys_b64: [],
    recovery_keys_hex: [],
    recovery_keys_shares: 0,
    recovery_keys_threshold: 0,
    root_token: res.root_token,
  };
}

function asText(res: InitResponse, opts: InitFlags): string {
  const keys = res.keys_base64.map((k, i) => `Unseal Key ${i + 1}: ${k}`).join('\n');
  return (
    `${keys}\n\nInitial Root Token: ${res.root_token}\n\n` +
    `Node initialized with ${opts.keyShares} key shares and a key threshold of ${opts.keyThreshold}.\n` +
    `Unseal it with ${opts.keyThreshold} of these keys (tessera operator unseal) after every restart.\n` +
    `Store the keys apart from each other; they are not shown again.\n`
  );
}
