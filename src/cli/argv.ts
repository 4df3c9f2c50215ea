/**
 * Vault's CLI takes long flags with one dash (`-format=json`, `-dev-root-token-id x`); commander
 * wants two. This rewrites a single-dash flag of two or more letters into the double-dash form
 * before parsing, so both spellings work.
 *
 *   normaliseArgv(['read', '-format=json', 'secret/x']) // ['read', '--format=json', 'secret/x']
 */

/** A single dash, a letter, then at least one more name character; `=value` may follow. */
const singleDashLong = /^-[A-Za-z][A-Za-z0-9-]+(=.*)?$/s;

/**
 * Arguments after `--` are operands and stay as they are. A lone `-` (stdin) and negative numbers
 * never match. A value that itself looks like `-name` would be rewritten; Vault's own parser
 * reads such a value as a flag too.
 */
export function normaliseArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  let operandsOnly = false;
  for (const arg of argv) {
    if (operandsOnly) out.push(arg);
    else if (arg === '--') {
      operandsOnly = true;
      out.push(arg);
    } else out.push(singleDashLong.test(arg) ? `-${arg}` : arg);
  }
  return out;
}
