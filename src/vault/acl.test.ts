import { Acl, ROOT_CAPABILITY } from './acl.js';
import { defaultPolicy, parsePolicy, rootPolicy } from './policy.js';
import type { Capability, GrantCapability, Policy } from './policy.js';

/** Builds a policy through the real JSON parser: `{pattern: capabilities}`. */
function policy(name: string, rules: Record<string, Capability[]>): Policy {
  const path = Object.fromEntries(Object.entries(rules).map(([p, capabilities]) => [p, { capabilities }]));
  return parsePolicy(name, JSON.stringify({ path }));
}

describe('Acl priority: exactly one rule governs a path', () => {
  // Each rule grants a distinct capability, so the winner shows in capabilities().
  it.each<[string, Record<string, Capability[]>, string, string[]]>([
    ['exact beats a glob', { 'secret/a': ['read'], 'secret/*': ['update'] }, 'secret/a', ['read']],
    ['a glob covers longer names', { 'secret/a': ['read'], 'secret/*': ['update'] }, 'secret/ab', ['update']],
    ['exact beats a + pattern', { 'secret/a/b': ['read'], 'secret/+/b': ['update'] }, 'secret/a/b', ['read']],
    ['the longest glob prefix wins', { 'secret/*': ['read'], 'secret/app/*': ['update'] }, 'secret/app/x', ['update']],
    ['a later first wildcard wins (glob vs +)', { 'foo/a*': ['read'], 'foo/+': ['update'] }, 'foo/ab', ['read']],
    ['a later first wildcard wins (+ vs +)', { 'foo/bar/+/baz': ['read'], 'foo/+/bar/baz': ['update'] }, 'foo/bar/bar/baz', ['read']],
    ['a later first wildcard wins over more +', { 'a/b/+/+': ['read'], 'a/+/c/d': ['update'] }, 'a/b/c/d', ['read']],
    ['no trailing * beats a trailing * (+ patterns)', { 'foo/+/bar': ['read'], 'foo/+/ba*': ['update'] }, 'foo/x/bar', ['read']],
    ['no trailing * beats a trailing * (+ vs glob)', { 'foo/+': ['read'], 'foo/*': ['update'] }, 'foo/x', ['read']],
    ['fewer + segments win', { 'foo/+/bar/baz': ['read'], 'foo/+/+/baz': ['update'] }, 'foo/a/bar/baz', ['read']],
    ['the longer pattern wins', { 'foo/+/bar/ba*': ['read'], 'foo/+/bar/b*': ['update'] }, 'foo/x/bar/baz', ['read']],
    ['the lexically larger pattern wins', { 'a/+/b/+': ['read'], 'a/+/+/c': ['update'] }, 'a/1/b/c', ['read']],
    ['a narrower rule does not inherit a wider grant', { 'secret/*': ['read', 'update'], 'secret/a': ['read'] }, 'secret/a', ['read']],
    ['a matching rule with no capabilities grants nothing', { 'secret/*': ['read'], 'secret/a': [] }, 'secret/a', ['deny']],
    ['a deny rule on a narrower path', { 'secret/*': ['read'], 'secret/admin': ['deny'] }, 'secret/admin', ['deny']],
    ['nothing matches', { 'secret/*': ['read'] }, 'other/x', ['deny']],
  ])('%s', (_label, rules, path, expected) => {
    expect(new Acl([policy('p', rules)]).capabilities(path)).toEqual(expected);
  });
});

describe('Acl + segments match exactly one segment', () => {
  it.each<[string, string, boolean]>([
    ['secret/+/config', 'secret/a/config', true],
    ['secret/+/config', 'secret/a/b/config', false],
    ['secret/+/config', 'secret/config', false],
    ['secret/+/config', 'secret/a/config/x', false],
    ['secret/+/config', 'secret//config', true],
    ['secret/+', 'secret/a', true],
    ['secret/+', 'secret/a/b', false],
    ['+/x', 'a/x', true],
    ['+/x', 'a/y', false],
    ['secret/+/*', 'secret/a/b/c', true],
    ['secret/+/*', 'secret/a/', true],
    ['secret/+/*', 'secret/a', false],
    ['secret/+/da*', 'secret/a/data/x', true],
    ['secret/+/da*', 'secret/a/db', false],
    ['a/+/+/d', 'a/b/c/d', true],
    ['a/+/+/d', 'a/b/d', false],
  ])('%s on %s -> %s', (pattern, path, matches) => {
    expect(new Acl([policy('p', { [pattern]: ['read'] })]).allows(path, 'read')).toBe(matches);
  });
});

describe('Acl merging of identical patterns', () => {
  it('unites capabilities from several policies', () => {
    const acl = new Acl([policy('a', { 'secret/*': ['read'] }), policy('b', { 'secret/*': ['update'] })]);
    expect(acl.capabilities('secret/x')).toEqual(['read', 'update']);
  });

  it('unites the same pattern written twice in one policy', () => {
    const p = parsePolicy('x', 'path "a" {\n capabilities = ["read"]\n}\npath "a" {\n capabilities = ["list"]\n}\n');
    expect(new Acl([p]).capabilities('a')).toEqual(['list', 'read']);
  });

  it.each([
    ['deny last', ['read', 'deny']],
    ['deny first', ['deny', 'read']],
  ])('lets deny win and remove everything (%s)', (_label, order) => {
    const policies = order.map((c, i) => policy(`p${i}`, { 'secret/*': [c as Capability] }));
    const acl = new Acl(policies);
    expect(acl.allows('secret/x', 'read')).toBe(false);
    expect(acl.capabilities('secret/x')).toEqual(['deny']);
  });

  it('does not merge a glob with the exact path of the same stem', () => {
    const acl = new Acl([policy('a', { 'secret/': ['list'] }), policy('b', { 'secret/*': ['read'] })]);
    expect(acl.capabilities('secret/')).toEqual(['list']);
    expect(acl.capabilities('secret/x')).toEqual(['read']);
  });
});

describe('Acl.allows', () => {
  const acl = new Acl([policy('p', { 'secret/*': ['read', 'list'], 'secret/dir': ['list'], 'kv/+': ['list'], 'kv/*': ['read'] })]);

  it.each<[string, GrantCapability, boolean]>([
    ['secret/a', 'read', true],
    ['/secret/a', 'read', true],
    ['secret/a', 'update', false],
    ['secret/a', 'sudo', false],
    // A list of "dir/" is governed by an exact rule on "dir", as in Vault.
    ['secret/dir/', 'list', true],
    ['secret/dir/', 'read', true],
    ['secret/dir', 'read', false],
    // Lists try the path without its trailing slash first, so "kv/+" governs "kv/a/".
    ['kv/a/', 'list', true],
    ['kv/a/', 'read', true],
    ['kv/a', 'read', false],
  ])('%s %s -> %s', (path, capability, expected) => {
    expect(acl.allows(path, capability)).toBe(expected);
  });

  it('allows everything for the root policy and reports the root capability', () => {
    const root = new Acl([rootPolicy, policy('p', { '*': ['deny'] })]);
    expect(root.isRoot).toBe(true);
    expect(root.allows('sys/anything', 'sudo')).toBe(true);
    expect(root.capabilities('x')).toEqual([ROOT_CAPABILITY]);
  });

  it('allows nothing without policies', () => {
    const none = new Acl([]);
    expect(none.isRoot).toBe(false);
    expect(none.allows('cubbyhole/x', 'read')).toBe(false);
    expect(none.capabilities('cubbyhole/x')).toEqual(['deny']);
  });

  it('grants the default policy self-service paths and nothing else', () => {
    const d = new Acl([defaultPolicy()]);
    expect(d.allows('auth/token/lookup-self', 'read')).toBe(true);
    expect(d.allows('auth/token/lookup-self', 'update')).toBe(false);
    expect(d.allows('sys/wrapping/unwrap', 'update')).toBe(true);
    expect(d.allows('cubbyhole/app/key', 'create')).toBe(true);
    expect(d.allows('secret/data/app', 'read')).toBe(false);
    expect(d.allows('sys/policies/acl/default', 'update')).toBe(false);
  });
});
