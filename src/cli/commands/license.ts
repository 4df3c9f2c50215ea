/**
 * `tessera license dev -out DIR`: writes a development license and the public key of its issuer
 * into DIR, for test clusters. A dev license is not for production use.
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { example } from '../context.js';
import { services } from '../io.js';

export function register(parent: Command, ctx: Context): void {
  const license = parent.command('license').description('License tools');
  const dev = license
    .command('dev')
    .description('Write a development license and its issuer public key')
    .requiredOption('--out <dir>', 'directory to write into');
  example(dev, 'tessera license dev -out ./license');
  dev.action(
    ctx.action(async (opts: { out: string }) => {
      try {
        const { writeDevLicense } = await services(ctx.io);
        const written = await writeDevLicense(opts.out);
        ctx.out(`License: ${written.licensePath}\nIssuer public key: ${written.issuerPubPath}\n`);
        return 0;
      } catch (e) {
        return ctx.fail('writing the dev license', e);
      }
    }),
  );
}
