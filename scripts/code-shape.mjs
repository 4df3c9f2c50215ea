#!/usr/bin/env node
/**
 * The shape of a TypeScript source tree, read from the compiler's AST (the `typescript`
 * devDependency), for before/after figures of a refactor:
 *
 *   npm run shape                          # src/ of this checkout
 *   node scripts/code-shape.mjs /tmp/base/src
 *   node scripts/code-shape.mjs src --json # the same figures as one JSON object
 *
 * It prints files over 400 lines; the 15 longest functions (declarations, methods, constructors,
 * accessors, function expressions and arrow functions, each counted on its own, nested ones
 * included) and the longest one in the tree's `node/` folder; type escapes per top-level folder
 * (`as never`, `as unknown as`, explicit `any` types, `@ts-ignore` / `@ts-expect-error`); and the
 * import edges between top-level folders (static imports, re-exports and `import()` with a
 * relative specifier; one edge per importing file and imported file). Test files (`*.test.ts`) and
 * declaration files are left out. It only reads: exit 0 whatever it finds, 2 on bad arguments.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const LONG_FILE = 400;
const TOP_FUNCTIONS = 15;
const ROOT_FOLDER = '(root)';

const args = process.argv.slice(2);
const json = args.includes('--json');
const positional = args.filter((a) => !a.startsWith('--'));
if (positional.length > 1 || args.some((a) => a.startsWith('--') && a !== '--json')) {
  process.stderr.write('usage: node scripts/code-shape.mjs [source-dir] [--json]\n');
  process.exit(2);
}
const root = resolve(positional[0] ?? 'src');
if (!statSync(root, { throwIfNoEntry: false })?.isDirectory()) {
  process.stderr.write(`code-shape: ${root} is not a directory\n`);
  process.exit(2);
}

/** Every .ts source file under `dir`, tests and declaration files excluded, sorted. */
function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') out.push(...sourceFiles(path));
    } else if (/\.(ts|mts|tsx)$/.test(entry.name) && !/\.d\.m?ts$/.test(entry.name) && !/\.test\.(ts|mts|tsx)$/.test(entry.name)) {
      out.push(path);
    }
  }
  return out.sort();
}

/** The top-level folder of `rel` (a path relative to the root), or ROOT_FOLDER for a file at the root. */
function folderOf(rel) {
  const parts = rel.split(sep);
  return parts.length > 1 ? parts[0] : ROOT_FOLDER;
}

const lineOf = (sf, pos) => sf.getLineAndCharacterOfPosition(pos).line + 1;

function nameOfFunction(node) {
  const text = (n) => (n === undefined ? undefined : ts.isIdentifier(n) || ts.isPrivateIdentifier(n) || ts.isStringLiteral(n) || ts.isNumericLiteral(n) ? n.text : n.getText());
  const owner = () => {
    const cls = node.parent;
    return cls !== undefined && (ts.isClassLike(cls) || ts.isObjectLiteralExpression(cls)) && cls.name !== undefined ? `${cls.name.text}.` : '';
  };
  if (ts.isConstructorDeclaration(node)) return `${owner()}constructor`;
  if (ts.isMethodDeclaration(node) || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node)) {
    const kind = ts.isGetAccessorDeclaration(node) ? 'get ' : ts.isSetAccessorDeclaration(node) ? 'set ' : '';
    return `${kind}${owner()}${text(node.name)}`;
  }
  if (node.name !== undefined) return text(node.name);
  // An anonymous function takes the name of what it is assigned to, or the call it is passed to.
  const p = node.parent;
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) return text(p.name);
  if (ts.isBinaryExpression(p) && p.operatorToken.kind === ts.SyntaxKind.EqualsToken) return p.left.getText();
  if (ts.isCallExpression(p)) return `<${ts.isArrowFunction(node) ? 'arrow' : 'function'} in ${p.expression.getText().slice(0, 40)}(...)>`;
  return `<${ts.isArrowFunction(node) ? 'arrow' : 'function'}>`;
}

function isFunctionLike(node) {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node)
  );
}

/** The imported file of a relative specifier, resolved as NodeNext does for our `.js` spellings. */
function resolveImport(fromFile, specifier, known) {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(fromFile), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base.replace(/\.jsx$/, '.tsx'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => known.has(c)) ?? candidates.find((c) => statSync(c, { throwIfNoEntry: false })?.isFile());
}

const files = sourceFiles(root);
const known = new Set(files);
const longFiles = [];
const functions = [];
const escapes = new Map(); // folder -> counts
const edges = new Map(); // from folder -> to folder -> Set of "fromFile>toFile"
const emptyEscapes = () => ({ asNever: 0, asUnknownAs: 0, any: 0, tsIgnore: 0 });

for (const file of files) {
  const rel = relative(root, file);
  const folder = folderOf(rel);
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > LONG_FILE) longFiles.push({ path: rel, lines });
  const esc = escapes.get(folder) ?? emptyEscapes();
  escapes.set(folder, esc);
  const addEdge = (specifier) => {
    const target = resolveImport(file, specifier, known);
    if (target === undefined || !target.startsWith(root + sep)) return;
    const to = folderOf(relative(root, target));
    if (to === folder) return;
    const row = edges.get(folder) ?? new Map();
    edges.set(folder, row);
    const set = row.get(to) ?? new Set();
    row.set(to, set);
    set.add(`${file}>${target}`);
  };

  const visit = (node) => {
    if (isFunctionLike(node) && node.body !== undefined) {
      const start = lineOf(sf, node.getStart(sf));
      const end = lineOf(sf, node.getEnd());
      functions.push({ path: rel, folder, line: start, name: nameOfFunction(node), lines: end - start + 1 });
    }
    if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) {
      if (node.type.kind === ts.SyntaxKind.NeverKeyword) esc.asNever++;
      const inner = ts.isParenthesizedExpression(node.expression) ? node.expression.expression : node.expression;
      if ((ts.isAsExpression(inner) || ts.isTypeAssertionExpression(inner)) && inner.type.kind === ts.SyntaxKind.UnknownKeyword) esc.asUnknownAs++;
    }
    if (node.kind === ts.SyntaxKind.AnyKeyword) esc.any++;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      addEdge(node.moduleSpecifier.text);
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] !== undefined && ts.isStringLiteralLike(node.arguments[0])) {
      addEdge(node.arguments[0].text);
    }
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      addEdge(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);

  // Directives live in comments, which the AST does not hold. The compiler honours one only at
  // the start of a `//` or `/*` comment that opens its line, so a line match is exact enough (a
  // raw token scan would take the `/*` inside a regular expression for a comment).
  esc.tsIgnore += text.split('\n').filter((l) => /^\s*\/(\/|\*+)\s*@ts-(ignore|expect-error)\b/.test(l)).length;
}

longFiles.sort((a, b) => b.lines - a.lines || a.path.localeCompare(b.path));
functions.sort((a, b) => b.lines - a.lines || a.path.localeCompare(b.path) || a.line - b.line);
const longest = functions.slice(0, TOP_FUNCTIONS);
const longestInNode = functions.find((f) => f.folder === 'node');
const folders = [...new Set(files.map((f) => folderOf(relative(root, f))))].sort();
const matrix = Object.fromEntries(folders.map((from) => [from, Object.fromEntries(folders.map((to) => [to, edges.get(from)?.get(to)?.size ?? 0]))]));
const crossEdges = folders.reduce((n, from) => n + folders.reduce((m, to) => m + matrix[from][to], 0), 0);
const folderPairs = folders.reduce((n, from) => n + folders.filter((to) => matrix[from][to] > 0).length, 0);
const totals = [...escapes.values()].reduce((t, e) => ({ asNever: t.asNever + e.asNever, asUnknownAs: t.asUnknownAs + e.asUnknownAs, any: t.any + e.any, tsIgnore: t.tsIgnore + e.tsIgnore }), emptyEscapes());
const totalLines = files.reduce((n, f) => n + readFileSync(f, 'utf8').split('\n').length, 0);

if (json) {
  process.stdout.write(
    `${JSON.stringify({ root, files: files.length, longFiles, longestFunctions: longest, longestInNode: longestInNode ?? null, escapes: Object.fromEntries([...escapes].sort()), escapeTotals: totals, importMatrix: matrix, crossFolderEdges: crossEdges, folderPairs }, null, 2)}\n`,
  );
  process.exit(0);
}

const out = [];
const pad = (s, n) => String(s).padEnd(n);
const padL = (s, n) => String(s).padStart(n);
out.push(`code shape of ${root}: ${files.length} source files (tests excluded), about ${totalLines} lines`);
out.push('');
out.push(`files over ${LONG_FILE} lines: ${longFiles.length}`);
for (const f of longFiles) out.push(`  ${padL(f.lines, 5)}  ${f.path}`);
out.push('');
out.push(`the ${TOP_FUNCTIONS} longest functions (lines, path:line, name):`);
for (const f of longest) out.push(`  ${padL(f.lines, 5)}  ${pad(`${f.path}:${f.line}`, 44)} ${f.name}`);
out.push(longestInNode === undefined ? 'longest function in node/: (no node/ folder)' : `longest function in node/: ${longestInNode.lines} lines, ${longestInNode.path}:${longestInNode.line} ${longestInNode.name}`);
out.push('');
out.push('type escapes per folder (as never, as unknown as, any, @ts-ignore/@ts-expect-error):');
const w = Math.max(8, ...folders.map((f) => f.length)) + 2;
out.push(`  ${pad('folder', w)}${padL('never', 7)}${padL('unk-as', 8)}${padL('any', 6)}${padL('ts-ign', 8)}`);
for (const f of folders) {
  const e = escapes.get(f) ?? emptyEscapes();
  if (e.asNever + e.asUnknownAs + e.any + e.tsIgnore === 0) continue;
  out.push(`  ${pad(f, w)}${padL(e.asNever, 7)}${padL(e.asUnknownAs, 8)}${padL(e.any, 6)}${padL(e.tsIgnore, 8)}`);
}
out.push(`  ${pad('total', w)}${padL(totals.asNever, 7)}${padL(totals.asUnknownAs, 8)}${padL(totals.any, 6)}${padL(totals.tsIgnore, 8)}`);
out.push('');
out.push(`import edges between top-level folders: ${crossEdges} file pairs over ${folderPairs} folder pairs (row imports column)`);
const cw = Math.max(5, ...folders.map((f) => f.length)) + 1;
out.push(`  ${pad('', w)}${folders.map((f) => padL(f, cw)).join('')}`);
for (const from of folders) {
  out.push(`  ${pad(from, w)}${folders.map((to) => padL(from === to ? '.' : matrix[from][to] === 0 ? '' : matrix[from][to], cw)).join('')}`);
}
process.stdout.write(`${out.join('\n')}\n`);
