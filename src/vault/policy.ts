/**
 * Vault ACL policies: parse HCL or JSON policy text into path rules that an Acl evaluates.
 *
 *   const app = parsePolicy('app', 'path "secret/*" {\n  capabilities = ["read", "list"]\n}');
 *   const same = parsePolicy('app', '{"path": {"secret/*": {"capabilities": ["read", "list"]}}}');
 *   new Acl([app, defaultPolicy()]).allows('secret/db', 'read'); // true
 *
 * Policy HCL goes through policy-hcl.ts (strict, linear). Also home of `parseHcl`, the config
 * loader's HCL: policy-hcl.ts's parser first, and only for text it does not take (heredocs,
 * expressions) hcl2-parser, which is slow (seconds for 100 KB) and big (a GopherJS runtime of
 * about 13 MB of heap and 0.7 s to load), so it is loaded on that first use, never otherwise.
 */
import { createRequire } from 'node:module';
import { InvalidRequest } from '../core/errors.js';
import { parsePolicyHcl, type HclResult } from './policy-hcl.js';

export const Capability = {
  create: 'create',
  read: 'read',
  update: 'update',
  patch: 'patch',
  delete: 'delete',
  list: 'list',
  sudo: 'sudo',
  deny: 'deny',
} as const;
export type Capability = (typeof Capability)[keyof typeof Capability];
/** What a request can ask for; `deny` is only ever written in a policy. */
export type GrantCapability = Exclude<Capability, 'deny'>;

const capabilityOrder: readonly Capability[] = Object.values(Capability);

export interface PathRule {
  /** The pattern as written minus any leading '/': may end in '*' and hold '+' segments. */
  readonly pattern: string;
  /** Unique, in `Capability` order; a rule that denies holds exactly `['deny']`. */
  readonly capabilities: readonly Capability[];
}

export interface Policy {
  /** Lower-cased and trimmed, as Vault stores policy names. */
  readonly name: string;
  /**
   * Sorted by pattern (the HCL parser does not keep the written order); a pattern written twice
   * appears twice, and the Acl merges them.
   */
  readonly rules: readonly PathRule[];
  readonly raw: string;
}

export const ROOT_POLICY_NAME = 'root';
export const DEFAULT_POLICY_NAME = 'default';

/** The built-in superuser policy: an Acl that holds it allows everything. It has no rules. */
export const rootPolicy: Policy = Object.freeze({ name: ROOT_POLICY_NAME, rules: Object.freeze([]), raw: '' });

/** The essential paths of Vault's built-in `default` policy, attached to tokens unless opted out. */
export const DEFAULT_POLICY_TEXT = `# Allow tokens to look up their own properties
path "auth/token/lookup-self" {
  capabilities = ["read"]
}

# Allow tokens to renew and revoke themselves
path "auth/token/renew-self" {
  capabilities = ["update"]
}
path "auth/token/revoke-self" {
  capabilities = ["update"]
}

# Allow a token to look up its own capabilities on a path
path "sys/capabilities-self" {
  capabilities = ["update"]
}

# Allow a token to renew and look up leases
path "sys/renew" {
  capabilities = ["update"]
}
path "sys/leases/renew" {
  capabilities = ["update"]
}
path "sys/leases/lookup" {
  capabilities = ["update"]
}

# Allow a token to manage its own cubbyhole
path "cubbyhole/*" {
  capabilities = ["create", "read", "update", "delete", "list"]
}

# Allow a token to wrap values, and to look up and unwrap response-wrapping tokens
path "sys/wrapping/wrap" {
  capabilities = ["update"]
}
path "sys/wrapping/lookup" {
  capabilities = ["update"]
}
path "sys/wrapping/unwrap" {
  capabilities = ["update"]
}
`;

export function defaultPolicy(): Policy {
  return parsePolicy(DEFAULT_POLICY_NAME, DEFAULT_POLICY_TEXT);
}

/** Vault's pre-capabilities shorthand `policy = "..."`. */
const legacyPolicies: Readonly<Record<string, readonly Capability[]>> = {
  deny: ['deny'],
  read: ['read', 'list'],
  write: ['create', 'read', 'update', 'delete', 'list'],
  sudo: ['create', 'read', 'update', 'delete', 'list', 'sudo'],
};

/** Keys Vault accepts in a path block that narrow a grant; ignoring them would widen access. */
const unsupportedPathKeys = new Set([
  'allowed_parameters',
  'denied_parameters',
  'required_parameters',
  'min_wrapping_ttl',
  'max_wrapping_ttl',
  'mfa_methods',
  'control_group',
  'subscribe_event_types',
]);

/**
 * Bounds on policy text, checked before any parser runs: the parser recurses per bracket
 * (1,000 nested brackets overflowed the stack of the one used before). Real policies hold tens
 * of paths, a few levels deep.
 */
export const POLICY_LIMITS = { maxBytes: 128 * 1024, maxDepth: 16, maxPaths: 1000 } as const;

/**
 * Deepest bracket nesting outside strings and comments (counting stops past `limit`), and how
 * many blocks open at the top level (HCL's `path "x" {`): one linear pass, before parsing.
 */
function bracketShape(text: string, limit: number): { deepest: number; topBlocks: number } {
  let depth = 0;
  let deepest = 0;
  let topBlocks = 0;
  let i = 0;
  while (i < text.length && deepest <= limit) {
    const skip = skipLiteral(text, i);
    if (skip > i) {
      i = skip;
      continue;
    }
    const c = text[i];
    if (c === '{' && depth === 0) topBlocks++;
    if (c === '{' || c === '[' || c === '(') deepest = Math.max(deepest, ++depth);
    else if (c === '}' || c === ']' || c === ')') depth = Math.max(0, depth - 1);
    i++;
  }
  return { deepest, topBlocks };
}

function checkBounds(text: string, fail: (what: string) => never): void {
  const bytes = Buffer.byteLength(text);
  if (bytes > POLICY_LIMITS.maxBytes) fail(`policy text is ${bytes} bytes; at most ${POLICY_LIMITS.maxBytes} are accepted`);
  const shape = bracketShape(text, POLICY_LIMITS.maxDepth);
  if (shape.deepest > POLICY_LIMITS.maxDepth) fail(`brackets nested deeper than ${POLICY_LIMITS.maxDepth} levels`);
  if (shape.topBlocks > POLICY_LIMITS.maxPaths) fail(`${shape.topBlocks} blocks; at most ${POLICY_LIMITS.maxPaths} path blocks are accepted`);
}

/**
 * Parses policy text. JSON when the text starts with '{', HCL otherwise.
 * @throws InvalidRequest naming the policy, the path and what is wrong.
 */
export function parsePolicy(name: string, text: string): Policy {
  const policyName = name.trim().toLowerCase();
  if (policyName === '') throw new InvalidRequest('policy name must not be empty');
  const fail = (what: string): never => {
    throw new InvalidRequest(`policy "${policyName}": ${what}`);
  };
  if (policyName === ROOT_POLICY_NAME) fail('the root policy is built in and cannot be defined');
  if (text.trim() === '') fail('policy text is empty');
  checkBounds(text, fail);

  const tree = parseText(text, fail);
  for (const key of Object.keys(tree)) {
    if (key !== 'name' && key !== 'path') fail(`unknown top-level key "${key}" (expected "path" blocks)`);
  }
  const blocks = pathBlocks(tree['path'], fail);
  if (blocks.length > POLICY_LIMITS.maxPaths) fail(`${blocks.length} path blocks; at most ${POLICY_LIMITS.maxPaths} are accepted`);
  const rules = blocks
    .map(({ pattern, body }) => parseRule(pattern, body, fail))
    .sort((a, b) => (a.pattern < b.pattern ? -1 : a.pattern > b.pattern ? 1 : 0));
  return Object.freeze({ name: policyName, rules: Object.freeze(rules), raw: text });
}

function parseText(text: string, fail: (what: string) => never): Record<string, unknown> {
  if (text.trimStart().startsWith('{')) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      return fail(`invalid JSON: ${(e as Error).message}`);
    }
    return isObject(value) ? value : fail('JSON policy must be an object');
  }
  const parsed = parsePolicyHcl(text);
  if (!parsed.ok) return fail(parsed.problem);
  return parsed.value;
}

/** Accepts HCL's `{pattern: [body...]}`, JSON's `{pattern: body}`, and lists of either. */
function pathBlocks(raw: unknown, fail: (what: string) => never): { pattern: string; body: unknown }[] {
  if (raw === undefined) return [];
  const maps = Array.isArray(raw) ? raw : [raw];
  const blocks: { pattern: string; body: unknown }[] = [];
  for (const map of maps) {
    if (!isObject(map)) return fail('"path" must map path patterns to blocks');
    for (const [pattern, bodies] of Object.entries(map)) {
      for (const body of Array.isArray(bodies) ? bodies : [bodies]) blocks.push({ pattern, body });
    }
  }
  return blocks;
}

function parseRule(written: string, body: unknown, policyFail: (what: string) => never): PathRule {
  const fail = (what: string): never => policyFail(`path "${written}": ${what}`);
  const pattern = written.startsWith('/') ? written.slice(1) : written;
  if (pattern.includes('+*')) fail(`invalid use of wildcards ('+*' is forbidden)`);
  if (!isObject(body)) return fail('must be a block such as { capabilities = ["read"] }');

  for (const key of Object.keys(body)) {
    if (unsupportedPathKeys.has(key)) fail(`"${key}" is not supported`);
    else if (key !== 'capabilities' && key !== 'policy' && key !== 'comment') fail(`unknown key "${key}"`);
  }
  if (body['capabilities'] === undefined && body['policy'] === undefined) fail('missing "capabilities"');

  const wanted: string[] = [];
  const caps = body['capabilities'];
  if (caps !== undefined) {
    if (!Array.isArray(caps) || !caps.every((c): c is string => typeof c === 'string')) {
      fail('"capabilities" must be a list of strings');
    } else {
      wanted.push(...caps);
    }
  }
  const legacy = body['policy'];
  if (legacy !== undefined) {
    const mapped = typeof legacy === 'string' ? legacyPolicies[legacy] : undefined;
    if (mapped === undefined) fail(`invalid policy ${JSON.stringify(legacy)} (valid: deny, read, write, sudo)`);
    else wanted.push(...mapped);
  }

  const valid = new Set<string>(capabilityOrder);
  for (const c of wanted) {
    if (!valid.has(c)) fail(`unknown capability "${c}" (valid: ${capabilityOrder.join(', ')})`);
  }
  const capabilities = wanted.includes(Capability.deny)
    ? [Capability.deny]
    : capabilityOrder.filter((c) => wanted.includes(c));
  return Object.freeze({ pattern, capabilities: Object.freeze(capabilities) });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export type { HclResult };

/**
 * Parses HCL into plain JSON values: blocks come back as arrays of bodies, labelled blocks as
 * nested objects keyed by label (`listener "tcp" {...}` -> `{listener: {tcp: [{...}]}}`).
 * policy-hcl.ts's parser answers whatever it takes (the same tree shape); the rest goes to
 * hcl2-parser. Vault's HCL 1 also takes several attributes on one line (`{ a = 1  b = 2 }`),
 * which HCL 2 refuses, so a failed parse there is retried with those lines split. hcl2-parser
 * reports no detail on failure, so the failing top-level statement is located by parsing each
 * one alone; `line` is 1-based, or undefined when no single statement fails.
 */
export function parseHcl(text: string): HclResult {
  const strict = parsePolicyHcl(text);
  if (strict.ok) return strict;
  const value = tryHcl(text) ?? tryHcl(splitOneLineBlocks(text));
  if (value !== undefined) return { ok: true, value };
  for (const statement of topLevelStatements(text)) {
    if (tryHcl(statement.text) !== undefined || tryHcl(splitOneLineBlocks(statement.text)) !== undefined) continue;
    return { ok: false, line: statement.line, problem: `HCL syntax error in the statement at line ${statement.line}` };
  }
  return { ok: false, line: undefined, problem: 'HCL syntax error (for example a key defined twice)' };
}

type Hcl2 = { parseToObject(text: string): unknown };
let hcl2: Hcl2 | undefined;

function tryHcl(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  hcl2 ??= createRequire(import.meta.url)('hcl2-parser') as Hcl2;
  const [value, error] = hcl2.parseToObject(text) as [unknown, unknown];
  return !error && isObject(value) ? value : undefined;
}

/**
 * Puts a newline after each '{', before each '}', and before each `name =` inside braces, outside
 * strings, comments, brackets and parentheses. Undefined when there is nothing to split or the
 * text holds a heredoc (whose body must stay verbatim).
 */
function splitOneLineBlocks(text: string): string | undefined {
  if (text.includes('<<')) return undefined;
  let out = '';
  let braces = 0;
  let brackets = 0;
  let i = 0;
  while (i < text.length) {
    const skip = skipLiteral(text, i);
    if (skip > i) {
      out += text.slice(i, skip);
      i = skip;
      continue;
    }
    const c = text[i] ?? '';
    if (c === '[' || c === '(') brackets++;
    if (c === ']' || c === ')') brackets = Math.max(0, brackets - 1);
    if (brackets === 0 && c === '{') braces++;
    if (brackets === 0 && c === '}') braces = Math.max(0, braces - 1);
    if (brackets === 0 && (c === '{' || c === '}')) {
      out += c === '{' ? '{\n' : '\n}';
      i++;
      continue;
    }
    const gap = braces > 0 && brackets === 0 ? /^[ \t]+(?=[A-Za-z_][\w-]*[ \t]*=(?![=>]))/.exec(text.slice(i)) : null;
    if (gap !== null) {
      out += '\n';
      i += gap[0].length;
      continue;
    }
    out += c;
    i++;
  }
  return out === text ? undefined : out;
}

/** If a string or comment starts at `i`, the index just past it; otherwise `i`. */
function skipLiteral(text: string, i: number): number {
  const c = text[i];
  const next = text[i + 1];
  if (c === '"') {
    let j = i + 1;
    while (j < text.length && text[j] !== '"' && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
    return text[j] === '"' ? j + 1 : j;
  }
  if (c === '#' || (c === '/' && next === '/')) {
    const end = text.indexOf('\n', i);
    return end < 0 ? text.length : end;
  }
  if (c === '/' && next === '*') {
    const end = text.indexOf('*/', i + 2);
    return end < 0 ? text.length : end + 2;
  }
  return i;
}

/**
 * Splits HCL text at newlines outside brackets, strings and comments. A heredoc or an unclosed
 * bracket makes the rest of the text one statement, which still locates the error's start.
 */
function topLevelStatements(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let depth = 0;
  let start = 0;
  let i = 0;
  const flush = (end: number): void => {
    const chunk = text.slice(start, end);
    const first = start + Math.max(0, chunk.search(/\S/));
    if (chunk.trim() !== '') out.push({ line: 1 + countNewlines(text.slice(0, first)), text: chunk });
  };
  while (i < text.length) {
    const skip = skipLiteral(text, i);
    if (skip > i) {
      i = skip;
      continue;
    }
    const c = text[i];
    if (c === '<' && text[i + 1] === '<') depth = Number.POSITIVE_INFINITY;
    if (c === '{' || c === '[' || c === '(') depth++;
    if (c === '}' || c === ']' || c === ')') depth = Math.max(0, depth - 1);
    if (c === '\n' && depth === 0) {
      flush(i);
      start = i + 1;
    }
    i++;
  }
  flush(text.length);
  return out;
}

function countNewlines(s: string): number {
  let n = 0;
  for (const ch of s) if (ch === '\n') n++;
  return n;
}
