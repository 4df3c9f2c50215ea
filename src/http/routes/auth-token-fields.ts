/**
 * Vault's tokenutil fields, as userpass users and approle roles take them: `token_policies` (or
 * the older `policies`), `token_ttl`, `token_max_ttl` (or `ttl`, `max_ttl`), `token_num_uses`,
 * `token_no_default_policy`. The newer name wins when both are given.
 */
import { z } from 'zod';
import type { TokenParams } from '../../vault/auth/index.js';
import { boolish, duration, intish, stringList } from '../fields.js';

export const tokenFields = {
  token_policies: stringList.optional(),
  policies: stringList.optional(),
  token_ttl: duration.optional(),
  ttl: duration.optional(),
  token_max_ttl: duration.optional(),
  max_ttl: duration.optional(),
  token_num_uses: intish.pipe(z.number().int().min(0, 'token_num_uses cannot be negative')).optional(),
  token_no_default_policy: boolish.optional(),
};

type TokenFieldValues = { [K in keyof typeof tokenFields]?: z.output<(typeof tokenFields)[K]> };

/** Only the parameters given, so an update keeps the others. */
export function tokenParams(f: TokenFieldValues): Partial<TokenParams> {
  const policies = f.token_policies ?? f.policies;
  const ttl = f.token_ttl ?? f.ttl;
  const maxTtl = f.token_max_ttl ?? f.max_ttl;
  return {
    ...(policies !== undefined ? { token_policies: policies } : {}),
    ...(ttl !== undefined ? { token_ttl: ttl } : {}),
    ...(maxTtl !== undefined ? { token_max_ttl: maxTtl } : {}),
    ...(f.token_num_uses !== undefined ? { token_num_uses: f.token_num_uses } : {}),
    ...(f.token_no_default_policy !== undefined ? { token_no_default_policy: f.token_no_default_policy } : {}),
  };
}
