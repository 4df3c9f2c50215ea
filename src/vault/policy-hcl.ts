/**
 * A strict parser for the HCL that Vault policies are written in, linear in the text's length.
 * hcl2-parser (a GopherJS build) took seconds of the event loop for a policy within the limits
 * (1,000 paths: 2.2-7 s, growing faster than the text), so policies no longer go through it.
 *
 *   parsePolicyHcl('path "a/*" { capabilities = ["read"] }')
 *   // { ok: true, value: { path: { 'a/*': [{ capabilities: ['read'] }] } } }
 *
 * The grammar: top-level attributes (`name = "x"`) and blocks (`path "label" { ... }`, labels
 * quoted or bare); inside a block, attributes and nested blocks; values are strings, numbers,
 * true/false/null, lists `[a, b,]` and objects `{ k = v, "k2": v }`. Comments `#`, `//`,
 * `/* *\/`. Newlines carry no meaning, so several attributes or blocks may share a line (as in
 * Vault's HCL 1). Not supported (a syntax error): heredocs, expressions, variables, string
 * templates (`${`, `%{`; `$${` and `%%{` are the literal text).
 *
 * The tree has hcl2-parser's shape, which the policy reader expects: a block is an array of
 * bodies under its labels (`path "a" {...}` -> `{path: {a: [{...}]}}`), repeated blocks append.
 * An attribute defined twice in one body is an error; at the top level it has no single line
 * (as before), inside a block the block's line is named.
 */
/** A parse: the tree, or where (1-based line of the failing top-level statement, if one) and what. */
export type HclResult =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly line: number | undefined; readonly problem: string };

class Syntax extends Error {}

const IDENT = /[A-Za-z_][A-Za-z0-9_-]*/y;
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const PLAIN = /[^"\\\n$%]*/y;

type Tree = Record<string, unknown>;

/** Own properties only, so a key such as `__proto__` is data, never the prototype. */
function get(obj: Tree, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}
function put(obj: Tree, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

class Reader {
  i = 0;
  constructor(private readonly text: string) {}

  /** Skips whitespace and comments; true if anything is left. */
  more(): boolean {
    const t = this.text;
    for (;;) {
      const c = t.charCodeAt(this.i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.i++;
      else if (c === 0x23 || (c === 0x2f && t[this.i + 1] === '/')) {
        const end = t.indexOf('\n', this.i);
        this.i = end < 0 ? t.length : end + 1;
      } else if (c === 0x2f && t[this.i + 1] === '*') {
        const end = t.indexOf('*/', this.i + 2);
        if (end < 0) throw new Syntax();
        this.i = end + 2;
      } else return this.i < t.length;
    }
  }

  peek(): string {
    this.more();
    return this.text[this.i] ?? '';
  }

  eat(ch: string): boolean {
    if (this.peek() !== ch) return false;
    this.i++;
    return true;
  }

  expect(ch: string): void {
    if (!this.eat(ch)) throw new Syntax();
  }

  ident(): string | undefined {
    this.more();
    IDENT.lastIndex = this.i;
    const m = IDENT.exec(this.text);
    if (m === null) return undefined;
    this.i += m[0].length;
    return m[0];
  }

  /** A quoted string at the cursor (after `more()`), unescaped. */
  string(): string {
    const t = this.text;
    let out = '';
    let j = this.i + 1;
    for (;;) {
      PLAIN.lastIndex = j;
      const run = PLAIN.exec(t)?.[0] ?? '';
      out += run;
      j += run.length;
      const c = t[j];
      if (c === '"') break;
      if (c === undefined || c === '\n') throw new Syntax();
      if (c === '$' || c === '%') {
        // A template (`${`, `%{`) is not supported; a doubled sign before `{` is the literal text.
        if (t[j + 1] === c && t[j + 2] === '{') {
          out += `${c}{`;
          j += 3;
        } else if (t[j + 1] === '{') throw new Syntax();
        else {
          out += c;
          j++;
        }
        continue;
      }
      j = this.escape(j + 1, (s) => (out += s));
    }
    this.i = j + 1;
    return out;
  }

  private escape(j: number, put: (s: string) => void): number {
    const t = this.text;
    const e = t[j];
    const simple: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' };
    if (e !== undefined && simple[e] !== undefined) {
      put(simple[e] as string);
      return j + 1;
    }
    const width = e === 'u' ? 4 : e === 'U' ? 8 : 0;
    const hex = t.slice(j + 1, j + 1 + width);
    if (width === 0 || !new RegExp(`^[0-9A-Fa-f]{${width}}$`).test(hex)) throw new Syntax();
    const code = parseInt(hex, 16);
    if (code > 0x10ffff) throw new Syntax();
    put(String.fromCodePoint(code));
    return j + 1 + width;
  }

  value(): unknown {
    const c = this.peek();
    if (c === '"') return this.string();
    if (c === '[') {
      this.i++;
      const list: unknown[] = [];
      while (!this.eat(']')) {
        list.push(this.value());
        if (!this.eat(',')) {
          this.expect(']');
          break;
        }
      }
      return list;
    }
    if (c === '{') {
      this.i++;
      const obj: Tree = {};
      while (!this.eat('}')) {
        const key = this.peek() === '"' ? this.string() : this.ident();
        if (key === undefined || Object.hasOwn(obj, key)) throw new Syntax();
        if (!this.eat('=')) this.expect(':');
        put(obj, key, this.value());
        this.eat(',');
      }
      return obj;
    }
    NUMBER.lastIndex = this.i;
    const num = NUMBER.exec(this.text);
    if (num !== null) {
      this.i += num[0].length;
      return Number(num[0]);
    }
    const word = this.ident();
    if (word === 'true') return true;
    if (word === 'false') return false;
    if (word === 'null') return null;
    throw new Syntax();
  }

  /** Attributes and blocks until `}` (inside a block) or the end of the text (top level). */
  body(into: Tree, topLevel: boolean, onStatement?: (at: number) => void): Tree {
    const attributes = new Set<string>();
    for (;;) {
      if (topLevel ? !this.more() : this.eat('}')) return into;
      onStatement?.(this.i);
      const name = this.ident();
      if (name === undefined) throw new Syntax();
      if (this.eat('=')) {
        if (attributes.has(name) || Object.hasOwn(into, name)) throw new Syntax(topLevel ? 'twice' : undefined);
        attributes.add(name);
        put(into, name, this.value());
        continue;
      }
      const labels: string[] = [];
      while (!this.eat('{')) {
        const label = this.peek() === '"' ? this.string() : this.ident();
        if (label === undefined) throw new Syntax();
        labels.push(label);
      }
      if (attributes.has(name)) throw new Syntax();
      const block = this.body({}, false);
      let holder: Tree = into;
      let key = name;
      for (const label of labels) {
        const next = get(holder, key) ?? {};
        if (typeof next !== 'object' || next === null || Array.isArray(next)) throw new Syntax();
        put(holder, key, next);
        holder = next as Tree;
        key = label;
      }
      const list = get(holder, key) ?? [];
      if (!Array.isArray(list)) throw new Syntax();
      list.push(block);
      put(holder, key, list);
    }
  }
}

function lineAt(text: string, at: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < at; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

export function parsePolicyHcl(text: string): HclResult {
  const reader = new Reader(text);
  let statement = 0;
  try {
    const value = reader.body({}, true, (at) => (statement = at));
    return { ok: true, value };
  } catch (e) {
    if (!(e instanceof Syntax)) throw e;
    if (e.message === 'twice') return { ok: false, line: undefined, problem: 'HCL syntax error (for example a key defined twice)' };
    const line = lineAt(text, statement);
    return { ok: false, line, problem: `HCL syntax error in the statement at line ${line}` };
  }
}
