/**
 * `tessera operator generate-dr-token`: generates a DR operation token on a DR secondary from the
 * root key shares, with the UX of `vault operator generate-root -dr-token` (the flow is shared
 * with `generate-root`: token-generation.ts).
 *
 *   tessera operator generate-dr-token -init                 # prints the nonce and a generated OTP
 *   tessera operator generate-dr-token                       # prompts for shares until complete
 *   tessera operator generate-dr-token -decode=ENC -otp=OTP  # offline: prints the token
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { registerGeneration } from './token-generation.js';

export { decodeToken } from './token-generation.js';

export function register(parent: Command, ctx: Context): void {
  registerGeneration(parent, ctx, {
    name: 'generate-dr-token',
    description: 'Generate a DR operation token on a DR secondary from root key shares',
    what: 'DR operation token',
    tokenLabel: 'DR Operation Token',
    afterIssue: 'Delete the token (sys/replication/dr/secondary/operation-token/delete) when it is no longer needed.',
    generateOtpFlag: false,
    examples: [
      'tessera operator generate-dr-token -init',
      'tessera operator generate-dr-token',
      'tessera operator generate-dr-token -decode="$ENCODED" -otp="$OTP"',
      'tessera operator generate-dr-token -init -pgp-key=ops.pub',
    ],
    endpoints: (ctx, flags) => {
      const api = ctx.client(flags).replication;
      return {
        status: () => api.operationTokenStatus(),
        start: (o) => api.operationTokenStart(o),
        cancel: () => api.operationTokenCancel(),
        update: (key, nonce) => api.operationTokenUpdate(key, nonce),
      };
    },
  });
}
