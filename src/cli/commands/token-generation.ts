/**
 * The shared command behind `tessera operator generate-root` and `generate-dr-token`: a token
 * generated from root key shares, with the UX of `vault operator generate-root`.
 *
 *   registerGeneration(operator, ctx, { name: 'generate-root', ... });   // a GenerationCommand: names and endpoints
 *
 * Without a mode flag it starts an attempt when none is in progress, then takes shares (the KEY
 * argument, else a hidden prompt per share on a terminal, else one share per line of stdin) until
 * the token is issued. When this run started the attempt with an OTP (generated or given), the
 * token is decoded and printed too; otherwise decode it with -decode (OTP) or `base64 -d | gpg -d`
 * (PGP).
 *
 * It fails loudly rather than print something a script would take for a token: an attempt already
 * in progress is joined only with its `-nonce` (else exit 1, naming the nonce and `-cancel`);
 * `-init` over one fails the same way; a run that started the attempt from non-interactive input
 * and ran out of shares exits 1; a decoded value that is not `hvs.` + 24 base62 characters (wrong
 * OTP or encoded token) exits 2.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Option, type Command } from 'commander';
import { InvalidRequest } from '../../core/errors.js';
import { OTP_LENGTH, TOKEN_PREFIX, TOKEN_RANDOM_LENGTH, decodeOtp, randomBase62 } from '../../core/token-format.js';
import type { GenerationAttempt } from '../../api/generation.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { AttemptInProgress, UsageError } from '../errors.js';
import { readAll, readHidden, type Input } from '../io.js';
import { Format, json, table } from '../output.js';

interface Flags extends ClientFlags, FormatFlags {
  readonly init?: boolean;
  readonly status?: boolean;
  readonly cancel?: boolean;
  readonly decode?: string;
  readonly otp?: string;
  readonly pgpKey?: string;
  readonly nonce?: string;
  readonly generateOtp?: boolean;
  readonly drToken?: boolean;
}

/** The endpoints a generation command drives (GenerationApi, or the DR operation token calls). */
export interface GenerationEndpoints {
  status(): Promise<GenerationAttempt>;
  start(options: { otp?: string; pgpKey?: string }): Promise<GenerationAttempt>;
  cancel(): Promise<void>;
  update(key: string, nonce: string): Promise<GenerationAttempt>;
}

/** What differs between the commands that share this flow. */
export interface GenerationCommand {
  readonly name: string;
  readonly description: string;
  /** What is generated, in messages: 'root token', 'DR operation token'. */
  readonly what: string;
  /** Table row label of the decoded token. */
  readonly tokenLabel: string;
  /** Printed on stderr after a decoded token: what to do with it once done. */
  readonly afterIssue: string;
  /** Offers Vault's -generate-otp (prints an OTP for -init -otp). */
  readonly generateOtpFlag: boolean;
  /** Accepts Vault's `-dr-token` only to point at the command that does it (generate-dr-token). */
  readonly drTokenHint?: boolean;
  readonly examples: readonly string[];
  endpoints(ctx: Context, flags: ClientFlags): GenerationEndpoints;
}

const PROMPT = 'Unseal Key (will be hidden): ';

export function registerGeneration(parent: Command, ctx: Context, spec: GenerationCommand): void {
  const cmd = parent
    .command(spec.name)
    .description(spec.description)
    .argument('[key]', 'one key share, hex or base64; omit it to be prompted (keeps it out of shell history)')
    .option('--init', 'start a generation attempt and print its nonce (and the OTP, when generated)')
    .option('--status', 'print the attempt in progress')
    .option('--cancel', 'cancel the attempt in progress and clear its progress')
    .option('--decode <encoded>', 'decode an OTP-encoded token offline ("-" reads it from stdin); needs -otp')
    .option('--otp <otp>', 'with -init: the 28-character OTP to encode the token with; with -decode: the OTP to decode with')
    .option('--pgp-key <path>', 'with -init: file holding a binary or base64 OpenPGP public key to encrypt the token to')
    .option('--nonce <nonce>', 'join the attempt in progress with this nonce (required to add shares to an attempt this run did not start)');
  if (spec.drTokenHint) cmd.addOption(new Option('--dr-token', 'vault operator generate-root -dr-token: use generate-dr-token').hideHelp());
  if (spec.generateOtpFlag) cmd.option('--generate-otp', 'print a new 28-character OTP to give to -init -otp, and exit');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, ...spec.examples);
  cmd.action(
    ctx.action(async (key: string | undefined, opts: Flags) => {
      try {
        if (opts.drToken) {
          ctx.err('error: Tessera generates DR operation tokens with their own command.\n(Did you mean generate-dr-token? `tessera operator generate-dr-token` does what `vault operator generate-root -dr-token` does.)\n');
          return 2;
        }
        checkFlags(key, opts);
        if (opts.generateOtp) {
          ctx.out(`${randomBase62(OTP_LENGTH, randomBytes)}\n`);
          return 0;
        }
        if (opts.decode !== undefined) return await decodeMode(ctx, opts.decode, opts.otp ?? '', opts.format, spec.what);
        const api = spec.endpoints(ctx, opts);
        if (opts.cancel) {
          await api.cancel();
          ctx.out(opts.format === Format.json ? json({}) : `Success! ${capitalized(spec.what)} generation canceled (if it was started)\n`);
          return 0;
        }
        if (opts.status) return show(ctx, await api.status(), opts.format);
        // Local input is checked before the node is asked anything.
        const pgpKey = opts.pgpKey === undefined ? undefined : await readPgpKeyFile(opts.pgpKey);
        if (opts.init) {
          const current = await api.status();
          if (current.started) throw new AttemptInProgress(inProgress(current, spec));
          return show(ctx, await start(ctx, api, opts, pgpKey), opts.format);
        }
        return await provideShares(ctx, api, key, opts, spec, pgpKey);
      } catch (e) {
        return ctx.fail(`generating the ${spec.what}`, e);
      }
    }),
  );
}

function capitalized(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

type Api = GenerationEndpoints;

function checkFlags(key: string | undefined, opts: Flags): void {
  const modes = [opts.init, opts.status, opts.cancel, opts.decode !== undefined, opts.generateOtp].filter(Boolean).length;
  if (modes > 1) throw new UsageError('-init, -status, -cancel, -decode and -generate-otp are mutually exclusive');
  if (modes > 0 && key !== undefined) throw new UsageError('a key share is given only when providing shares, without -init, -status, -cancel or -decode');
  if (opts.decode !== undefined && !opts.otp) throw new UsageError('-decode needs -otp');
  if (opts.otp !== undefined && opts.pgpKey !== undefined) throw new UsageError('-otp and -pgp-key are mutually exclusive');
  if ((opts.status || opts.cancel || opts.decode !== undefined) && opts.pgpKey !== undefined) throw new UsageError('-pgp-key goes with -init');
}

async function start(ctx: Context, api: Api, opts: Flags, pgpKey: string | undefined): Promise<GenerationAttempt> {
  const attempt = await api.start({ ...(opts.otp ? { otp: opts.otp } : {}), ...(pgpKey ? { pgpKey } : {}) });
  if (attempt.otp && opts.init) {
    ctx.err('A one-time password has been generated for you and is shown in the OTP field. You need it to decode the token, so keep it safe.\n');
  }
  return attempt;
}

/** Starts an attempt when none is in progress, then submits shares until the token is issued. */
async function provideShares(ctx: Context, api: Api, key: string | undefined, opts: Flags, spec: GenerationCommand, pgpKey: string | undefined): Promise<number> {
  let attempt = await api.status();
  /** The OTP when this run started the attempt with one (generated or given): the token can be decoded here. */
  let otp = '';
  const startedHere = !attempt.started;
  if (startedHere) {
    if (opts.nonce !== undefined) throw new AttemptInProgress(`no attempt is in progress, so none has nonce ${opts.nonce}; start one without -nonce (or with -init)`);
    attempt = await start(ctx, api, opts, pgpKey);
    otp = attempt.otp || (opts.otp ?? '');
  } else if (opts.nonce === undefined) {
    // A leftover attempt (or someone else's): joining it by accident would hand this run's shares
    // to an attempt whose OTP it does not know.
    throw new AttemptInProgress(inProgress(attempt, spec));
  } else if (opts.pgpKey !== undefined) {
    throw new UsageError('an attempt is already in progress; -cancel it first to change the PGP key');
  } else {
    // Joining on purpose: an -otp given now is the one the attempt was started with, to decode.
    otp = opts.otp ?? '';
  }
  const nonce = opts.nonce ?? attempt.nonce;
  const shares = key !== undefined ? once(key) : ctx.io.stdin.isTTY ? prompted(ctx) : lines(ctx.io.stdin);
  try {
    for await (const share of shares) {
      attempt = await api.update(share, nonce);
      if (attempt.complete) break;
      if (key === undefined) ctx.err(`Progress: ${attempt.progress}/${attempt.required}\n`);
    }
  } catch (e) {
    // The attempt outlives this run; an OTP the node generated for it is shown nowhere else.
    if (otp && !opts.otp) ctx.err(`The attempt is still in progress (nonce ${nonce}). Its OTP is ${otp}; keep it to decode the token.\n`);
    throw e;
  }
  if (!attempt.complete) {
    show(ctx, { ...attempt, otp: opts.otp ? '' : otp }, opts.format);
    // A script that fed every share it had and still has no token must not look successful.
    if (startedHere && key === undefined && !ctx.io.stdin.isTTY) {
      throw new AttemptInProgress(`the input ended after ${attempt.progress}/${attempt.required} shares: no token was issued. ${inProgress(attempt, spec)}`);
    }
    return 0;
  }
  let token: string | undefined;
  let undecodable: unknown;
  try {
    token = otp && attempt.encoded_token ? decodeToken(attempt.encoded_token, otp, spec.what) : undefined;
  } catch (e) {
    // The token exists now and is shown nowhere else: print the encoded form, then fail.
    undecodable = e;
  }
  if (undecodable !== undefined) {
    show(ctx, attempt, opts.format);
    throw undecodable;
  }
  if (opts.format === Format.json) {
    ctx.out(json(token === undefined ? attempt : { ...attempt, token }));
    return 0;
  }
  ctx.out(table([...rows(attempt), ...(token === undefined ? [] : [[spec.tokenLabel, token] as const])]));
  if (token !== undefined) ctx.err(`${spec.afterIssue}\n`);
  return 0;
}

/** What to do about an attempt in progress: join it with its nonce, or cancel it. */
function inProgress(a: GenerationAttempt, spec: GenerationCommand): string {
  return (
    `a ${spec.what} generation attempt is already in progress (nonce ${a.nonce}, progress ${a.progress}/${a.required}). ` +
    `To add shares to it, pass -nonce=${a.nonce}; to drop it and start over, run: tessera operator ${spec.name} -cancel`
  );
}

async function* once(key: string): AsyncGenerator<string> {
  yield key;
}

/** One hidden prompt per share; Ctrl-C or Ctrl-D at an empty prompt stops. */
async function* prompted(ctx: Context): AsyncGenerator<string> {
  for (;;) {
    const share = await readHidden(ctx.io.stdin, ctx.io.stderr, PROMPT);
    if (share === null) return;
    if (share.trim() !== '') yield share.trim();
  }
}

/** Non-empty lines of a non-terminal stdin, as they arrive. */
async function* lines(stdin: Input): AsyncGenerator<string> {
  let pending = '';
  for await (const chunk of stdin) {
    pending += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    let end: number;
    while ((end = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, end).trim();
      pending = pending.slice(end + 1);
      if (line !== '') yield line;
    }
  }
  if (pending.trim() !== '') yield pending.trim();
}

function show(ctx: Context, attempt: GenerationAttempt, format: Format): number {
  ctx.out(format === Format.json ? json(attempt) : table(rows(attempt)));
  return 0;
}

/** Vault's generate-root table rows. */
function rows(a: GenerationAttempt): (readonly [string, string])[] {
  const out: (readonly [string, string])[] = [
    ['Nonce', a.nonce],
    ['Started', String(a.started)],
    ['Progress', `${a.progress}/${a.required}`],
    ['Complete', String(a.complete)],
  ];
  if (a.pgp_fingerprint) out.push(['PGP Fingerprint', a.pgp_fingerprint]);
  if (a.encoded_token) out.push(['Encoded Token', a.encoded_token]);
  if (a.otp) out.push(['OTP', a.otp]);
  if (a.otp_length) out.push(['OTP Length', String(a.otp_length)]);
  return out;
}

async function decodeMode(ctx: Context, encoded: string, otp: string, format: Format, what: string): Promise<number> {
  const text = encoded === '-' ? (await readAll(ctx.io.stdin)).trim() : encoded;
  if (text === '') throw new UsageError('no encoded token given');
  const token = decodeToken(text, otp, what);
  ctx.out(format === Format.json ? json({ token }) : `${token}\n`);
  return 0;
}

/**
 * base64 (padded or not) XOR the OTP, as `vault operator generate-root -decode` does, through the
 * node's own codec (core/token-format.ts), with CLI-worded errors.
 */
export function decodeToken(encoded: string, otp: string, what = 'token'): string {
  const length = Buffer.byteLength(otp, 'utf8');
  if (length !== OTP_LENGTH) throw new UsageError(`the OTP has ${length} characters but must have ${OTP_LENGTH}; check both values`);
  let token: string;
  try {
    token = decodeOtp(encoded, otp);
  } catch (e) {
    if (e instanceof InvalidRequest) throw new UsageError(`${e.message}; check both values`);
    throw e;
  }
  // Root and DR operation tokens are service tokens (core/token-format.ts): anything else means
  // the OTP or the encoded token is not the pair the node made.
  if (!TOKEN_SHAPE.test(token)) {
    throw new UsageError(`the decoded value is not a ${what} (${TOKEN_PREFIX} + ${TOKEN_RANDOM_LENGTH} characters): the OTP does not belong to this encoded token; check both values`);
  }
  return token;
}

const TOKEN_SHAPE = new RegExp(`^${TOKEN_PREFIX.replace('.', '\\.')}[A-Za-z0-9]{${TOKEN_RANDOM_LENGTH}}$`);

/** The key file as the base64 of its binary form, whether the file holds binary or base64. */
async function readPgpKeyFile(path: string): Promise<string> {
  let content: Buffer;
  try {
    content = await readFile(path);
  } catch (e) {
    throw new UsageError(`cannot read the PGP key file ${path}: ${(e as { code?: string }).code ?? String(e)}`);
  }
  const text = content.toString('utf8').replace(/\s+/g, '');
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(text) && Buffer.from(text, 'base64').toString('base64').replace(/=+$/, '') === text.replace(/=+$/, '')) {
    return text;
  }
  if (text.startsWith('-----BEGIN')) throw new UsageError('the PGP key file is ASCII-armored; give the binary key (gpg --export) or its base64');
  return content.toString('base64');
}

/**
 * The whole flow in one call, for commands that need a token to go on (`operator dr failover`):
 * starts an attempt with a node-generated OTP, takes shares (a hidden prompt per share on a
 * terminal, else one per line of stdin) until the token is issued, and resolves with it decoded.
 * An attempt already in progress is never joined (AttemptInProgress names it); input that ends
 * first cancels the attempt this call started and throws AttemptInProgress.
 */
export async function tokenFromShares(ctx: Context, api: GenerationEndpoints, spec: Pick<GenerationCommand, 'name' | 'what'>): Promise<string> {
  const current = await api.status();
  if (current.started) throw new AttemptInProgress(inProgress(current, spec as GenerationCommand));
  let attempt = await api.start({});
  const otp = attempt.otp;
  const nonce = attempt.nonce;
  ctx.err(`Enter ${attempt.required} unseal key shares of the primary to make the ${spec.what} (one per line).\n`);
  for await (const share of ctx.io.stdin.isTTY ? prompted(ctx) : lines(ctx.io.stdin)) {
    attempt = await api.update(share, nonce);
    if (attempt.complete) break;
    ctx.err(`Progress: ${attempt.progress}/${attempt.required}\n`);
  }
  if (!attempt.complete || !attempt.encoded_token) {
    await api.cancel();
    throw new AttemptInProgress(`the input ended after ${attempt.progress}/${attempt.required} shares: no ${spec.what} was issued (the attempt was canceled)`);
  }
  return decodeToken(attempt.encoded_token, otp, spec.what);
}
