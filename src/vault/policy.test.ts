import { InvalidRequest } from '../core/errors.js';
import { DEFAULT_POLICY_TEXT, defaultPolicy, parseHcl, parsePolicy } from './policy.js';

const hclText = `
# app policy
path "secret/*" {
  capabilities = ["read", "list"]
}

path "/secret/admin" {
  capabilities = ["sudo", "read", "deny"]
}
`;

function policyError(text: string, name = 'app'): InvalidRequest {
  try {
    parsePolicy(name, text);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidRequest);
    return e as InvalidRequest;
  }
  throw new Error('expected parsePolicy to throw');
}

describe('parsePolicy', () => {
  it('parses HCL into rules sorted by pattern, strips a leading slash, and reduces deny to deny alone', () => {
    const p = parsePolicy('  App ', hclText);
    expect(p.name).toBe('app');
    expect(p.raw).toBe(hclText);
    expect(p.rules).toEqual([
      { pattern: 'secret/*', capabilities: ['read', 'list'] },
      { pattern: 'secret/admin', capabilities: ['deny'] },
    ]);
  });

  it('parses the JSON form to the same rules as the HCL form', () => {
    const json = JSON.stringify({
      path: { 'secret/*': { capabilities: ['list', 'read'] }, '/secret/admin': { capabilities: ['deny'] } },
    });
    expect(parsePolicy('app', json).rules).toEqual(parsePolicy('app', hclText).rules);
  });

  it('accepts JSON with a list of path maps and a list of bodies', () => {
    const json = JSON.stringify({
      path: [{ 'a/*': [{ capabilities: ['read'] }, { capabilities: ['update'] }] }, { b: { capabilities: ['list'] } }],
    });
    expect(parsePolicy('x', json).rules).toEqual([
      { pattern: 'a/*', capabilities: ['read'] },
      { pattern: 'a/*', capabilities: ['update'] },
      { pattern: 'b', capabilities: ['list'] },
    ]);
  });

  it('keeps a pattern written twice as two rules (the Acl merges them)', () => {
    const p = parsePolicy('x', 'path "a" {\n capabilities = ["read"]\n}\npath "a" {\n capabilities = ["update"]\n}\n');
    expect(p.rules.map((r) => r.capabilities)).toEqual([['read'], ['update']]);
  });

  it.each([
    ['deny', ['deny']],
    ['read', ['read', 'list']],
    ['write', ['create', 'read', 'update', 'delete', 'list']],
    ['sudo', ['create', 'read', 'update', 'delete', 'list', 'sudo']],
  ])('maps the legacy policy = "%s" shorthand', (legacy, caps) => {
    expect(parsePolicy('x', `path "a" {\n policy = "${legacy}"\n}`).rules[0]?.capabilities).toEqual(caps);
  });

  it('accepts a name attribute, comments and patch', () => {
    const p = parsePolicy('x', 'name = "x"\npath "a" {\n comment = "why"\n capabilities = ["patch"]\n}');
    expect(p.rules).toEqual([{ pattern: 'a', capabilities: ['patch'] }]);
  });

  it.each([
    ['unknown capability', 'path "secret/*" {\n capabilities = ["raed"]\n}', ['"app"', '"secret/*"', '"raed"']],
    ['capabilities not a list', 'path "s" {\n capabilities = "read"\n}', ['"s"', 'list of strings']],
    ['missing capabilities', 'path "s" {\n comment = "x"\n}', ['"s"', 'missing "capabilities"']],
    ['unknown path key', 'path "s" {\n capabilites = ["read"]\n}', ['"s"', 'unknown key "capabilites"']],
    ['unsupported parameter constraint', 'path "s" {\n capabilities = ["read"]\n allowed_parameters = {}\n}', ['"allowed_parameters" is not supported']],
    ['bad legacy policy', 'path "s" {\n policy = "all"\n}', ['invalid policy "all"']],
    ['+* wildcard', 'path "a/+*" {\n capabilities = ["read"]\n}', ['"a/+*"', "'+*' is forbidden"]],
    ['unknown top-level key', 'paths "s" {\n capabilities = ["read"]\n}', ['unknown top-level key "paths"']],
    ['HCL syntax error with its line', 'path "a" {\n capabilities = ["read"]\n}\n\npath "b" {\n capabilities = [read\n}\n', ['"app"', 'line 5']],
    ['invalid JSON', '{"path": ', ['invalid JSON']],
    ['JSON path not a map', '{"path": "x"}', ['"path" must map']],
    ['empty text', '  \n', ['empty']],
  ])('rejects %s with a message naming what is wrong', (_label, text, parts) => {
    const e = policyError(text);
    for (const part of parts) expect(e.message).toContain(part);
  });

  it('refuses to define the built-in root policy and an empty name', () => {
    expect(policyError('path "a" {\n capabilities = ["read"]\n}', 'Root').message).toContain('root policy is built in');
    expect(policyError('path "a" {\n capabilities = ["read"]\n}', ' ').message).toContain('name must not be empty');
  });

  it('provides the default policy with the self-service paths', () => {
    const p = defaultPolicy();
    expect(p.name).toBe('default');
    expect(p.raw).toBe(DEFAULT_POLICY_TEXT);
    const byPattern = Object.fromEntries(p.rules.map((r) => [r.pattern, r.capabilities]));
    expect(byPattern['auth/token/lookup-self']).toEqual(['read']);
    expect(byPattern['auth/token/renew-self']).toEqual(['update']);
    expect(byPattern['auth/token/revoke-self']).toEqual(['update']);
    expect(byPattern['sys/capabilities-self']).toEqual(['update']);
    expect(byPattern['cubbyhole/*']).toEqual(['create', 'read', 'update', 'delete', 'list']);
    for (const op of ['wrap', 'lookup', 'unwrap']) expect(byPattern[`sys/wrapping/${op}`]).toEqual(['update']);
  });
});

describe('parseHcl', () => {
  it('takes what the strict parser does not (a heredoc) through hcl2-parser, with the same tree shape', () => {
    const r = parseHcl('listener "tcp" {\n  address = "a:1"\n}\nbanner = <<EOT\nhello\nEOT\n');
    expect(r).toEqual({ ok: true, value: { listener: { tcp: [{ address: 'a:1' }] }, banner: 'hello\n' } });
  });

  it('returns blocks as arrays of bodies under their labels', () => {
    const r = parseHcl('listener "tcp" {\n  address = "a:1"\n}\nx = 1\n');
    expect(r).toEqual({ ok: true, value: { listener: { tcp: [{ address: 'a:1' }] }, x: 1 } });
  });

  it('locates the failing top-level statement past comments and strings with braces', () => {
    const text = '# {\n/* {\n */\na = "{"\n\nb = [\n  1,\n]\nc = = 2\n';
    expect(parseHcl(text)).toEqual({ ok: false, line: 9, problem: expect.stringContaining('line 9') });
  });

  it('accepts several attributes on one line in a block, as Vault does', () => {
    const text = 'listener "tcp" { address = "a:1"  tls_disable = true  note = "x = {y}" }\npath "p" { capabilities = ["read", "list"] }';
    expect(parseHcl(text)).toEqual({
      ok: true,
      value: {
        listener: { tcp: [{ address: 'a:1', tls_disable: true, note: 'x = {y}' }] },
        path: { p: [{ capabilities: ['read', 'list'] }] },
      },
    });
  });

  it('still locates an error on a line that holds a one-line block', () => {
    const r = parseHcl('a = 1\nlistener "tcp" { address = "a:1"  tls_disable = }\n');
    expect(r).toEqual({ ok: false, line: 2, problem: expect.stringContaining('line 2') });
  });

  it('reports an error not tied to one statement without a line', () => {
    expect(parseHcl('a = 1\na = 2\n')).toEqual({ ok: false, line: undefined, problem: expect.stringContaining('HCL syntax error') });
  });
});
