import { performance } from 'node:perf_hooks';
import { DEFAULT_POLICY_TEXT, parseHcl, parsePolicy } from './policy.js';
import { parsePolicyHcl } from './policy-hcl.js';

/** A policy of `n` path blocks, each as an admin would write it; 1,000 of them is about 130 KB. */
function bigPolicy(n: number): string {
  let text = '';
  for (let i = 0; i < n; i++) {
    text += `path "secret/data/tenants/team-${i}/apps/service-${i}/*" {\n  capabilities = ["create", "read", "update", "delete", "list"]\n}\n`;
  }
  return text;
}

/** The fastest of a few runs: what parsing costs, without the pauses of a loaded machine. */
function cost(text: string): number {
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 9; run++) {
    const start = performance.now();
    parsePolicy('big', text);
    best = Math.min(best, performance.now() - start);
  }
  return best;
}

describe('parsePolicyHcl', () => {
  it.each([
    ['the default policy', DEFAULT_POLICY_TEXT],
    ['comments of every kind, a name, legacy policy', '/* a\n { */ name = "x" // c\n# d\npath "a/*" {\n  policy = "read" # e\n}\n'],
    ['escapes and literal template signs', 'path "a\\"b\\\\c\\u00e9/$${x}/%%{y}/$/%" {\n  capabilities = ["read"]\n}\n'],
    ['labels written twice append', 'path "a" {\n capabilities = ["read"]\n}\npath "a" {\n capabilities = ["list"]\n}\npath "b" {\n capabilities = []\n}\n'],
    ['values of other types', 'path "a" {\n  capabilities = ["read",]\n  allowed_parameters = {\n    "x" = []\n    y = ["1", 2, true, null]\n  }\n  min_wrapping_ttl = 30\n  n = -1.5e3\n  f = false\n}\n'],
    ['nested blocks and bare labels', 'path a {\n capabilities = ["read"]\n inner "x" "y" {\n  z = "1"\n }\n}\n'],
  ])('gives the tree hcl2-parser gives for %s', (_label, text) => {
    expect(parsePolicyHcl(text)).toEqual(parseHcl(text));
  });

  it('takes several attributes and several path blocks on one line, as Vault does', () => {
    const text = 'path "a" { capabilities = ["read"] } path "b" { capabilities = ["list"]  policy = "read" }\n';
    expect(parsePolicy('x', text).rules).toEqual([
      { pattern: 'a', capabilities: ['read'] },
      { pattern: 'b', capabilities: ['read', 'list'] },
    ]);
  });

  it.each([
    ['an unclosed block', 'path "a" {\n capabilities = ["read"]\n\n', 1],
    ['a bare word as a value', 'name = "x"\npath "a" {\n capabilities = [read]\n}\n', 2],
    ['a string across lines', 'path "a\nb" {\n capabilities = ["read"]\n}\n', 1],
    ['a template', 'x = 1\n\npath "a/${v}" {\n capabilities = ["read"]\n}\n', 3],
    ['a heredoc', 'path "a" {\n comment = <<EOT\nx\nEOT\n capabilities = ["read"]\n}\n', 1],
    ['an attribute twice in a block', 'path "a" {\n capabilities = ["read"]\n capabilities = ["list"]\n}\n', 1],
    ['a bad escape', 'path "a\\q" {\n capabilities = ["read"]\n}\n', 1],
    ['an unclosed comment', 'path "a" {\n capabilities = ["read"]\n}\n/* x', 1],
  ])('refuses %s, naming the line of its statement', (_label, text, line) => {
    expect(parsePolicyHcl(text)).toEqual({ ok: false, line, problem: `HCL syntax error in the statement at line ${line}` });
  });

  it('refuses a top-level key defined twice without a line, as before', () => {
    expect(parsePolicyHcl('name = "a"\nname = "b"\n')).toEqual({ ok: false, line: undefined, problem: 'HCL syntax error (for example a key defined twice)' });
  });

  it('keeps a label named __proto__ as data and never touches Object.prototype', () => {
    const r = parsePolicyHcl('path "__proto__" {\n capabilities = ["read"]\n}\nx = { "__proto__" = "y" }\n');
    expect(r.ok && Object.keys(r.value['path'] as object)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['__proto__']).toBe(Object.prototype);
    expect(parsePolicy('x', 'path "__proto__" {\n capabilities = ["read"]\n}\n').rules).toEqual([{ pattern: '__proto__', capabilities: ['read'] }]);
  });

  it('parses a policy at the limits (1,000 paths, ~130 KB) at a cost that grows with the text, not faster', () => {
    const small = bigPolicy(100);
    const large = bigPolicy(1000);
    expect(Buffer.byteLength(large)).toBeGreaterThan(120_000);
    expect(parsePolicy('big', large).rules).toHaveLength(1000);
    // Ten times the text: a linear parser costs about ten times as much, a quadratic one a hundred
    // (hcl2-parser cost 30-60 times). The bound leaves room for a loaded CI machine's noise.
    const [a, b] = [cost(small), cost(large)];
    expect(b / Math.max(a, 0.05)).toBeLessThan(50);
    // And it never holds the event loop for long: hcl2-parser took 2.2-7 s here; this takes milliseconds.
    expect(b).toBeLessThan(1_000);
  });
});
