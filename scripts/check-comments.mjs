#!/usr/bin/env node
/**
 * Comments name only files, constants and functions that exist (ARCHITECTURE.md habit 9:
 * comments say what the code does today). Run by `npm run lint`:
 *
 *   node scripts/check-comments.mjs            # exit 1 and path:line: name for every stale name
 *   node scripts/check-comments.mjs --report   # every stale name, PENDING ones too, and exit 0
 *
 * It reads every comment in src/, test/ and scripts/ (TypeScript and JavaScript comments from the
 * compiler's parse, `#` lines of shell scripts) and picks out file names: `foo.ts`,
 * `foo.test.ts`, `dir/foo.mjs`, `replication.proto`, `NOTES.md`, ... A bare name passes when a
 * file of that name exists anywhere in the repository; a path passes when it names an existing
 * file relative to the repository root, to the commenting file, or as the tail of an existing
 * path (`grpc/server.ts`; also `../core/x.js`, since usage examples spell imports as their
 * importers do). Our imports spell `.ts` files as `.js` (NodeNext) and the build puts src/ in
 * dist/, so `engine.js` passes for engine.ts and `dist/cli/main.js` for src/cli/main.ts.
 * Names of things outside this repository pass only through EXTERNAL below: keep it small, and
 * name there only what belongs to someone else (Vault's Go sources, other projects' files).
 *
 * Code names are checked too: a CONSTANT_NAME, a `call()` or a backquoted `camelCase` name in a
 * comment must occur as an identifier (or a word of a string) somewhere in the code of src/,
 * test/ or scripts/. A bare file name passes when a file of that name exists anywhere, so a
 * comment that points at the wrong one of two same-named files is not caught.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import ts from 'typescript';

/** Names of other projects' files that our comments cite on purpose. */
const EXTERNAL = {
  /** Vault's and OpenBao's Go sources (`postgresql.go`, `vault/token_store.go`, ...). */
  extensions: new Set(['go']),
  names: new Set([
    // The project's specifications, kept beside the repository (../shared/), not in it.
    'architecture.md',
    'dependencies.md',
    'replication.md',
    'wire.md',
    'nats.js', // the nats.js client, an ARCHITECTURE.md anchor
    'node.js', // Node.js itself
  ]),
  /** Functions and constants of other code, cited in comments as `name()` or CONSTANT_NAME. */
  identifiers: new Set([
    '_getConstructorOptions', // grpc-js 1.14 internals that sni-credentials.ts builds on
    '_getSecureContextOptions',
    'USER_HZ', // Linux's clock ticks per second, the unit of /proc/<pid>/stat times
    'setSecureContext', // Node's tls.Server method
  ]),
};

/**
 * Stale names in files that were being rewritten elsewhere when this check arrived; each entry is
 * a debt, to be fixed in that file and then deleted here (the check says when). New ones fail.
 */
const PENDING = [];

const SCANNED = ['src', 'test', 'scripts'];
/** This file's own comments show made-up names as examples. */
const SELF = 'scripts/check-comments.mjs';
const EXTENSIONS = ['ts', 'mts', 'cts', 'tsx', 'js', 'mjs', 'cjs', 'proto', 'md', 'sh', 'go'];
const SOURCE = /\.(ts|mts|cts|tsx|js|mjs|cjs)$/;

const report = process.argv.includes('--report');
const repo = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: repo, encoding: 'utf8' })
  .split('\0')
  .filter((f) => f !== '' && !f.startsWith('node_modules/'));
const paths = new Set(files);
const basenames = new Set(files.map((f) => posix.basename(f)));

/** `foo.js` for a file we keep as foo.ts (NodeNext import spelling), and the same for .mjs/.mts. */
const sourceSpellings = (name) => [name, name.replace(/\.js$/, '.ts'), name.replace(/\.mjs$/, '.mts'), name.replace(/\.js$/, '.tsx')];

function exists(name, fromFile) {
  const lower = name.toLowerCase();
  if (EXTERNAL.names.has(lower)) return true;
  if (EXTERNAL.extensions.has(lower.slice(lower.lastIndexOf('.') + 1))) return true;
  if (!name.includes('/')) return sourceSpellings(name).some((n) => basenames.has(n));
  const candidates = sourceSpellings(name.replace(/^dist\//, 'src/')).flatMap((n) => [posix.normalize(n), posix.join(posix.dirname(fromFile), n)]);
  if (candidates.some((c) => paths.has(c))) return true;
  // The tail of an existing path, on a segment boundary: `grpc/server.ts`, `vault/kv/engine.ts`.
  const tails = sourceSpellings(name.replace(/^(\.\.?\/)+/, '')).map((n) => `/${n}`);
  return files.some((f) => tails.some((t) => `/${f}`.endsWith(t)));
}

/**
 * File names in a comment's text. A name is a run of path characters ending in one of
 * EXTENSIONS, not part of a URL, a glob (`*.test.ts`), a template (`<node>.log`) or a longer word.
 */
const NAME = new RegExp(`(?<![\\w.*<>{}$@/-])((?:\\.{1,2}/)*(?:[\\w-]+/)*[\\w-][\\w.-]*\\.(?:${EXTENSIONS.join('|')}))(?![\\w*/-]|\\.\\w)`, 'g');

function namesIn(text) {
  const withoutUrls = text.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, (m) => ' '.repeat(m.length));
  return [...withoutUrls.matchAll(NAME)].map((m) => ({ name: m[1], offset: m.index }));
}

/**
 * [offset, text] of every comment in a source file, read from the parsed file (a raw scan would
 * take the `/*` of a regular expression for a comment), and every identifier and word of a string
 * literal of its code into `identifiers`.
 */
function commentsOf(path, text, identifiers) {
  const out = [];
  if (path.endsWith('.sh')) {
    let offset = 0;
    for (const line of text.split('\n')) {
      const hash = line.search(/(^|\s)#/);
      if (hash >= 0 && !line.startsWith('#!')) out.push([offset + hash, line.slice(hash)]);
      offset += line.length + 1;
    }
    return out;
  }
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, /\.m?js$|\.cjs$/.test(path) ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  const seen = new Set();
  const add = (ranges) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      seen.add(r.pos);
      out.push([r.pos, text.slice(r.pos, r.end)]);
    }
  };
  const visit = (node) => {
    add(ts.getLeadingCommentRanges(text, node.pos));
    add(ts.getTrailingCommentRanges(text, node.end));
    if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) identifiers.add(node.text.replace(/^#/, ''));
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) for (const m of node.text.matchAll(/[A-Za-z_$][\w$]*/g)) identifiers.add(m[0]);
    for (const child of node.getChildren(sf)) visit(child);
  };
  visit(sf);
  return out;
}

/**
 * The code names a comment mentions, by offset: CONSTANT_NAMEs (with an underscore), calls
 * (`name()`, `obj.method()`, `#private()`) and camelCase names in backquotes.
 */
function codeNamesIn(comment) {
  const out = [];
  const text = comment.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, (m) => ' '.repeat(m.length));
  for (const m of text.matchAll(/(?<![\w$.-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w$])/g)) out.push({ name: m[0], offset: m.index });
  for (const m of text.matchAll(/(?<![\w$#-])#?([A-Za-z_$][\w$]*)\(\)/g)) out.push({ name: m[1], offset: m.index });
  for (const m of text.matchAll(/`([a-z_$][\w$]*[A-Z][\w$]*)`/g)) out.push({ name: m[1], offset: m.index });
  return out;
}

const stale = [];
const identifiers = new Set();
const named = []; // code names comments mention, checked once every file's identifiers are known
for (const file of files) {
  if (file === SELF || !SCANNED.some((d) => file.startsWith(`${d}/`)) || !(SOURCE.test(file) || file.endsWith('.sh'))) continue;
  const text = readFileSync(join(repo, file), 'utf8');
  const lineOf = (pos) => text.slice(0, pos).split('\n').length;
  for (const [start, comment] of commentsOf(file, text, identifiers)) {
    for (const { name, offset } of namesIn(comment)) {
      if (!exists(name, file)) stale.push({ file, line: lineOf(start + offset), name });
    }
    for (const { name, offset } of codeNamesIn(comment)) named.push({ file, line: lineOf(start + offset), name });
  }
}
for (const n of named) if (!identifiers.has(n.name) && !EXTERNAL.identifiers.has(n.name)) stale.push(n);
stale.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);

const isPending = (s) => PENDING.some((p) => p.file === s.file && p.name === s.name);
const failing = report ? stale : stale.filter((s) => !isPending(s));
for (const s of failing) process.stdout.write(`${s.file}:${s.line}: ${s.name}\n`);
for (const p of PENDING) {
  if (!stale.some((s) => s.file === p.file && s.name === p.name)) process.stderr.write(`check-comments: ${p.file} no longer names ${p.name}: remove it from PENDING\n`);
}
if (failing.length > 0) {
  const n = failing.length;
  process.stderr.write(`check-comments: ${n} name${n === 1 ? '' : 's'} in comments of no file, constant or function that exists${report ? ' (report only)' : ''}\n`);
  process.exit(report ? 0 : 1);
}
