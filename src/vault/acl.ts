/**
 * An ACL compiled from a token's policies, answering "may this path get this capability?" the way
 * Vault does.
 *
 *   const acl = new Acl([parsePolicy('app', text), defaultPolicy()]);
 *   if (!acl.allows('secret/data/app', 'read')) throw new PermissionDenied();
 *   acl.capabilities('secret/data/app'); // ['list', 'read'], or ['deny'], or ['root']
 *
 * Matching: an exact pattern beats every wildcard pattern. Otherwise one rule wins among those that
 * match (a trailing '*' is a prefix glob, a '+' segment matches exactly one segment), by Vault's
 * priority: the later first wildcard; then a pattern without a trailing '*'; then fewer '+'; then
 * the longer pattern; then the lexically larger. Rules with the identical pattern, from one policy
 * or several, merge first: their capabilities unite, and a 'deny' in any of them leaves only 'deny'.
 */
import { Capability, ROOT_POLICY_NAME } from './policy.js';
import type { GrantCapability, Policy } from './policy.js';

/** What `capabilities()` reports for a root ACL, as Vault's sys/capabilities does. */
export const ROOT_CAPABILITY = 'root';

type RuleKind = 'exact' | 'prefix' | 'segment';

interface CompiledRule {
  readonly pattern: string;
  readonly kind: RuleKind;
  /** The pattern without its trailing '*'. */
  readonly stem: string;
  /** Whether the pattern ends in a '*' glob. */
  readonly isPrefix: boolean;
  /** Offset of the first '+' segment, or of the '*' for a pure prefix glob. */
  readonly firstWildcard: number;
  readonly wildcards: number;
  /** `stem` split at '/', for segment matching. */
  readonly segments: readonly string[];
  readonly capabilities: Set<Capability>;
}

export class Acl {
  readonly isRoot: boolean;
  readonly #exact = new Map<string, CompiledRule>();
  /** Pure prefix globs, longest stem first, so the first match is the longest prefix. */
  readonly #prefixes: CompiledRule[];
  readonly #segmentRules: CompiledRule[];

  constructor(policies: readonly Policy[]) {
    this.isRoot = policies.some((p) => p.name === ROOT_POLICY_NAME);
    const byPattern = new Map<string, CompiledRule>();
    for (const policy of policies) {
      for (const rule of policy.rules) {
        const existing = byPattern.get(rule.pattern);
        if (existing === undefined) {
          byPattern.set(rule.pattern, compile(rule.pattern, rule.capabilities));
        } else {
          merge(existing.capabilities, rule.capabilities);
        }
      }
    }
    const all = [...byPattern.values()];
    for (const r of all) if (r.kind === 'exact') this.#exact.set(r.pattern, r);
    this.#prefixes = all.filter((r) => r.kind === 'prefix').sort((a, b) => b.stem.length - a.stem.length);
    this.#segmentRules = all.filter((r) => r.kind === 'segment');
  }

  /** Whether a request on `path` (no leading '/' needed) may use `capability`. */
  allows(path: string, capability: GrantCapability): boolean {
    if (this.isRoot) return true;
    const rule = this.#lookup(path, capability === Capability.list);
    if (rule === undefined || rule.capabilities.has(Capability.deny)) return false;
    return rule.capabilities.has(capability);
  }

  /**
   * The capabilities the winning rule grants on `path`, sorted; `['deny']` when nothing is granted
   * and `['root']` for a root ACL. Uses list-style matching (a trailing '/' may be dropped), as Vault.
   */
  capabilities(path: string): string[] {
    if (this.isRoot) return [ROOT_CAPABILITY];
    const rule = this.#lookup(path, true);
    if (rule === undefined || rule.capabilities.has(Capability.deny) || rule.capabilities.size === 0) {
      return [Capability.deny];
    }
    return [...rule.capabilities].sort();
  }

  /**
   * The one rule that governs `path`. For list requests Vault also tries the path without its
   * trailing '/', so a rule on "secret/dir" governs listing "secret/dir/".
   */
  #lookup(rawPath: string, isList: boolean): CompiledRule | undefined {
    const path = rawPath.replace(/^\/+/, '');
    const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
    const exact = this.#exact.get(path) ?? (isList ? this.#exact.get(trimmed) : undefined);
    if (exact !== undefined) return exact;
    if (isList && trimmed !== path) {
      const rule = this.#nonExact(trimmed);
      if (rule !== undefined) return rule;
    }
    return this.#nonExact(path);
  }

  #nonExact(path: string): CompiledRule | undefined {
    let best = this.#prefixes.find((r) => path.startsWith(r.stem));
    if (this.#segmentRules.length === 0) return best;
    const parts = path.split('/');
    for (const rule of this.#segmentRules) {
      if (segmentsMatch(rule, parts) && (best === undefined || outranks(rule, best))) best = rule;
    }
    return best;
  }
}

function compile(pattern: string, capabilities: readonly Capability[]): CompiledRule {
  const isPrefix = pattern.endsWith('*');
  const stem = isPrefix ? pattern.slice(0, -1) : pattern;
  const segments = stem.split('/');
  const wildcards = segments.filter((s) => s === '+').length;
  const kind: RuleKind = wildcards > 0 ? 'segment' : isPrefix ? 'prefix' : 'exact';
  let firstWildcard = stem.length;
  if (wildcards > 0) {
    const index = segments.indexOf('+');
    firstWildcard = segments.slice(0, index).reduce((n, s) => n + s.length + 1, 0);
  }
  const caps = new Set<Capability>();
  merge(caps, capabilities);
  return { pattern, kind, stem, isPrefix, firstWildcard, wildcards, segments, capabilities: caps };
}

/** Unites `incoming` into `into`; a deny on either side leaves only deny. */
function merge(into: Set<Capability>, incoming: readonly Capability[]): void {
  if (into.has(Capability.deny)) return;
  if (incoming.includes(Capability.deny)) {
    into.clear();
    into.add(Capability.deny);
    return;
  }
  for (const c of incoming) into.add(c);
}

/**
 * '+' matches any one segment; a trailing '*' lets the last pattern segment match as a prefix and
 * any further segments follow. Without '*', the segment counts must be equal.
 */
function segmentsMatch(rule: CompiledRule, parts: readonly string[]): boolean {
  const segs = rule.segments;
  if (parts.length < segs.length) return false;
  if (!rule.isPrefix && parts.length !== segs.length) return false;
  const last = segs.length - 1;
  return segs.every((seg, i) => {
    const part = parts[i] ?? '';
    return seg === '+' || seg === part || (rule.isPrefix && i === last && part.startsWith(seg));
  });
}

/** Whether `a` has higher priority than `b` (both non-exact and both matching). */
function outranks(a: CompiledRule, b: CompiledRule): boolean {
  if (a.firstWildcard !== b.firstWildcard) return a.firstWildcard > b.firstWildcard;
  if (a.isPrefix !== b.isPrefix) return !a.isPrefix;
  if (a.wildcards !== b.wildcards) return a.wildcards < b.wildcards;
  if (a.stem.length !== b.stem.length) return a.stem.length > b.stem.length;
  return a.stem > b.stem;
}
