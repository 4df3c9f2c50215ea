/**
 * `tessera operator rotate`, `operator key-status` and `operator rekey`, with the flags of
 * `vault operator rekey`:
 *
 *   tessera operator rotate
 *   tessera operator key-status
 *   tessera operator rekey -init -key-shares=5 -key-threshold=3 [-pgp-keys=a.pub,b.pub,...] [-backup] [-verify]
 *   tessera operator rekey [-nonce=N] [KEY]      # one current share per run, or prompted / stdin lines
 *   tessera operator rekey -verify [-nonce=N] [KEY]   # one NEW share, when -init had -verify
 *   tessera operator rekey -status | -cancel [-verify]
 *
 * Progress is shown as `operator unseal` shows it; the new shares are printed once, when the
 * threshold is reached (PGP-encrypted when -pgp-keys was given: `base64 -d | gpg -d`).
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { RekeyStatus, RekeyUpdate, RekeyVerifyStatus } from '../../api/keys.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { UsageError } from '../errors.js';
import { readAll, readHidden } from '../io.js';
import { Format, json, table } from '../output.js';

interface RekeyFlags extends ClientFlags, FormatFlags {
  readonly init?: boolean;
  readonly status?: boolean;
  readonly cancel?: boolean;
  readonly verify?: boolean;
  readonly backup?: boolean;
  readonly keyShares?: string;
  readonly keyThreshold?: string;
  readonly pgpKeys?: string;
  readonly nonce?: string;
}

export function register(parent: Command, ctx: Context): void {
  const rotate = parent.command('rotate').description('Rotate the barrier encryption key (a new key term for new writes)');
  withFormatFlags(withClientFlags(rotate), false);
  example(rotate, 'tessera operator rotate');
  rotate.action(
    ctx.action(async (opts: ClientFlags & FormatFlags) => {
      try {
        const client = ctx.client(opts);
        await client.sys.keys.rotate();
        const s = await client.sys.keys.status();
        ctx.out(opts.format === Format.json ? json(s) : `Success! Rotated key\n\n${keyTable(s)}`);
        return 0;
      } catch (e) {
        return ctx.fail('rotating the key', e);
      }
    }),
  );

  const status = parent.command('key-status').description('Show the barrier key term, its install time and encryptions');
  withFormatFlags(withClientFlags(status), false);
  status.action(
    ctx.action(async (opts: ClientFlags & FormatFlags) => {
      try {
        const s = await ctx.client(opts).sys.keys.status();
        ctx.out(opts.format === Format.json ? json(s) : keyTable(s));
        return 0;
      } catch (e) {
        return ctx.fail('reading the key status', e);
      }
    }),
  );

  const rekey = parent
    .command('rekey')
    .description('Replace the unseal key shares (a new root key) with the current shares')
    .argument('[key]', 'one key share, hex or base64; omit it to be prompted (keeps it out of shell history)')
    .option('--init', 'start a rekey attempt')
    .option('--status', 'print the attempt in progress')
    .option('--cancel', 'cancel the attempt in progress (with -verify: restart only the verification)')
    .option('--verify', 'with -init: require the new shares to be proven before they take effect; else: give NEW shares to the verification')
    .option('--backup', 'with -init and -pgp-keys: keep the encrypted new shares on the node (sys/rekey/backup)')
    .option('--key-shares <n>', 'with -init: number of new shares', '5')
    .option('--key-threshold <n>', 'with -init: shares needed to unseal', '3')
    .option('--pgp-keys <files>', 'with -init: comma-separated files of binary or base64 OpenPGP public keys, one per new share')
    .option('--nonce <nonce>', 'the attempt to give shares to (read from the node when omitted)');
  withFormatFlags(withClientFlags(rekey), false);
  example(rekey, 'tessera operator rekey -init -key-shares=3 -key-threshold=2', 'tessera operator rekey', 'tessera operator rekey -status', 'tessera operator rekey -cancel');
  rekey.action(
    ctx.action(async (key: string | undefined, opts: RekeyFlags) => {
      try {
        const modes = [opts.init, opts.status, opts.cancel].filter(Boolean).length;
        if (modes > 1) throw new UsageError('-init, -status and -cancel are mutually exclusive');
        if (modes > 0 && key !== undefined) throw new UsageError('a key share is given only when providing shares');
        const api = ctx.client(opts).sys.keys;
        const out = (v: object, text: string): number => {
          ctx.out(opts.format === Format.json ? json(v) : text);
          return 0;
        };
        if (opts.cancel) {
          if (opts.verify) return out(await api.verifyCancel(), 'Success! Rekey verification canceled\n');
          await api.rekeyCancel();
          return out({}, 'Success! Canceled rekeying (if it was started)\n');
        }
        if (opts.status) return opts.verify ? out(await api.verifyStatus(), verifyTable(await api.verifyStatus())) : out(await api.rekeyStatus(), rekeyTable(await api.rekeyStatus()));
        if (opts.init) {
          const pgp_keys = opts.pgpKeys === undefined ? undefined : await Promise.all(opts.pgpKeys.split(',').map((f) => readKeyFile(f.trim())));
          const started = await api.rekeyStart({
            secret_shares: integer(opts.keyShares, '-key-shares'),
            secret_threshold: integer(opts.keyThreshold, '-key-threshold'),
            ...(pgp_keys !== undefined ? { pgp_keys } : {}),
            ...(opts.backup ? { backup: true } : {}),
            ...(opts.verify ? { require_verification: true } : {}),
          });
          return out(started, rekeyTable(started));
        }
        return await giveShares(ctx, api, key, opts);
      } catch (e) {
        return ctx.fail('rekeying', e);
      }
    }),
  );
}

type Api = ReturnType<Context['client']>['sys']['keys'];

/** Gives the KEY argument, or each prompted / stdin share, until the rekey (or verification) completes. */
async function giveShares(ctx: Context, api: Api, key: string | undefined, opts: RekeyFlags): Promise<number> {
  const nonce = opts.nonce ?? (opts.verify ? (await api.verifyStatus()).nonce : (await api.rekeyStatus()).nonce);
  if (nonce === '') throw new UsageError('no rekey is in progress: start one with -init');
  const shares = key !== undefined ? [key] : ctx.io.stdin.isTTY ? undefined : (await readAll(ctx.io.stdin)).split(/\s+/).filter((s) => s !== '');
  for (let i = 0; ; i++) {
    const share = shares !== undefined ? shares[i] : (await readHidden(ctx.io.stdin, ctx.io.stderr, 'Unseal Key (will be hidden): '))?.trim();
    if (share === undefined || share === '') break;
    const answer: RekeyUpdate | RekeyVerifyStatus = opts.verify ? await api.verifyUpdate(share, nonce) : await api.rekeyUpdate(share, nonce);
    if (answer.complete === true) {
      ctx.out(opts.format === Format.json ? json(answer) : completed(answer, opts.verify === true));
      return 0;
    }
    if (opts.format !== Format.json) ctx.out(table([['Nonce', nonce], ['Started', String(answer.started)], ['Rekey Progress', `${answer.progress}/${'required' in answer ? answer.required : answer.t}`]], ['Key', 'Value']));
    else ctx.out(json(answer));
  }
  return 0;
}

function completed(answer: RekeyUpdate | RekeyVerifyStatus, verify: boolean): string {
  if (verify) return `Success! Rekey verification complete: the new unseal keys are now in force (nonce ${answer.nonce})\n`;
  const done = answer as RekeyUpdate;
  const lines = (done.keys_base64 ?? []).map((k, i) => `Key ${i + 1}: ${done.pgp_fingerprints ? k : done.keys?.[i] ?? k}`);
  const after = done.verification_required === true
    ? `\nThe new keys are NOT in force until a threshold of them is given to: tessera operator rekey -verify -nonce=${done.verification_nonce ?? ''}\n`
    : '\nOperation nonce: ' + (done.nonce ?? '') + '\n\nThe unseal keys were rekeyed; the old ones no longer unseal this node or its secondaries.\n';
  return `${lines.join('\n')}\n${after}`;
}

function keyTable(s: { term: number; install_time: string; encryptions: number }): string {
  return table([['Key Term', String(s.term)], ['Install Time', s.install_time], ['Encryption Count', String(s.encryptions)]], ['Key', 'Value']);
}

function rekeyTable(s: RekeyStatus): string {
  const rows: [string, string][] = [['Nonce', s.nonce || 'n/a'], ['Started', String(s.started)], ['Rekey Progress', `${s.progress}/${s.required}`], ['New Shares', String(s.n)], ['New Threshold', String(s.t)], ['Verification Required', String(s.verification_required)]];
  if (s.pgp_fingerprints) rows.push(['PGP Fingerprints', s.pgp_fingerprints.join(', ')], ['Backup', String(s.backup)]);
  if (s.verification_nonce) rows.push(['Verification Nonce', s.verification_nonce]);
  return table(rows, ['Key', 'Value']);
}

function verifyTable(s: RekeyVerifyStatus): string {
  return table([['Nonce', s.nonce], ['Started', String(s.started)], ['New Shares', String(s.n)], ['New Threshold', String(s.t)], ['Verification Progress', `${s.progress}/${s.t}`]], ['Key', 'Value']);
}

function integer(v: string | undefined, flag: string): number {
  if (v === undefined || !/^\d+$/.test(v)) throw new UsageError(`${flag} must be a whole number`);
  return Number(v);
}

async function readKeyFile(path: string): Promise<string> {
  let content: Buffer;
  try {
    content = await readFile(path);
  } catch (e) {
    throw new UsageError(`cannot read the PGP key file ${path}: ${(e as { code?: string }).code ?? String(e)}`);
  }
  const text = content.toString('utf8').replace(/\s+/g, '');
  return /^[A-Za-z0-9+/]+={0,2}$/.test(text) ? text : content.toString('base64');
}
