/**
 * `tessera operator generate-root`: a new root token from the unseal key shares, on any unsealed
 * node but a DR secondary, with the flags of `vault operator generate-root` (the flow is shared
 * with `generate-dr-token`: token-generation.ts). On a performance secondary the shares are the
 * primary's: this is how an operator gets a first token there.
 *
 *   tessera operator generate-root -init                 # prints the nonce and a generated OTP
 *   tessera operator generate-root                       # prompts for shares until complete
 *   tessera operator generate-root -decode=ENC -otp=OTP  # offline: prints the token
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { registerGeneration } from './token-generation.js';

export function register(parent: Command, ctx: Context): void {
  registerGeneration(parent, ctx, {
    name: 'generate-root',
    drTokenHint: true,
    description: 'Generate a new root token from unseal key shares',
    what: 'root token',
    tokenLabel: 'Root Token',
    afterIssue: 'Revoke the root token (POST auth/token/revoke-self with it) when it is no longer needed.',
    generateOtpFlag: true,
    examples: [
      'tessera operator generate-root -init',
      'tessera operator generate-root',
      'tessera operator generate-root -decode="$ENCODED" -otp="$OTP"',
      'tessera operator generate-root -init -pgp-key=ops.pub',
      'tessera operator generate-root -cancel',
    ],
    endpoints: (ctx, flags) => ctx.client(flags).sys.generateRoot,
  });
}
