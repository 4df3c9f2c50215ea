/**
 * Path help, as Vault answers `GET /v1/<path>?help=1` and `vault path-help` prints it, from the same
 * declaration that routes the request: the route's pattern, each operation's summary, and the
 * parameters its field schemas take.
 *
 *   helpBody('sys/policies/acl/ops', routeHelp(route))
 *   // { help: 'Request:        sys/policies/acl/ops\nMatching Route: sys/policies/acl/:name\n...', see_also: null, openapi: {...} }
 *
 * The wire shape is Vault's: sdk/logical/response.go `HelpResponse` puts `help`, `see_also` and
 * `openapi` in the response data, and http/help.go's handler answers that data bare (no
 * request_id/data envelope), which is what the api package's `Help` struct decodes and
 * `vault path-help` prints (`help`). The text follows sdk/framework/path.go `pathHelpTemplate`
 * (Request, Matching Route, synopsis, ## PARAMETERS, ## DESCRIPTION), with an ## OPERATIONS
 * section because our summaries are per operation. `openapi` is a small OpenAPI 3.0.2 document of
 * the one path, as Vault's sdk/framework/openapi.go gives for one path.
 */
import type { z } from 'zod';
import { VERSION } from '../core/version.js';
import type { HelpField, Operation, PathHelp } from '../vault/logical.js';
import { boolish, duration, intish, stringList, stringMap } from './fields.js';
import type { Route } from './route.js';

export interface HelpBody {
  readonly help: string;
  readonly see_also: null;
  readonly openapi: Record<string, unknown>;
}

/** Whether a request asks for help: Vault's handler takes any non-empty `help` query value. */
export function wantsHelp(query: Readonly<Record<string, string>>): boolean {
  return query.help !== undefined && query.help !== '';
}

const METHODS: Readonly<Record<Operation, string>> = {
  read: 'GET',
  list: 'LIST, or GET with list=true',
  create: 'POST, PUT',
  update: 'POST, PUT',
  delete: 'DELETE',
  patch: 'PATCH',
};

const ACCESS: Readonly<Record<Route['access'], string>> = {
  public: 'No token needed.',
  token: "A token whose policies grant the operation's capability on the path.",
  sudo: "A token whose policies grant the operation's capability and sudo on the path.",
  body: 'Authorized by a credential in the body (a DR operation token), not a client token.',
};

type Def = { type: string; innerType?: z.ZodType; defaultValue?: unknown; options?: readonly z.ZodType[]; in?: z.ZodType; checks?: unknown[] };
const def = (s: z.ZodType): Def => s.def as Def;

/** What a field schema takes, by Vault's type names, and whether it is required or has a default. */
function describeSchema(schema: z.ZodType): { type: string; required: boolean; defaultValue?: unknown; description?: string } {
  let s = schema;
  let required = true;
  let defaultValue: unknown;
  let description = schema.description;
  for (;;) {
    const d = def(s);
    if (d.type === 'optional' || d.type === 'nullable') required = false;
    else if (d.type === 'default' || d.type === 'prefault') {
      required = false;
      defaultValue = d.defaultValue;
    } else if (d.type !== 'readonly' && d.type !== 'catch') break;
    s = d.innerType as z.ZodType;
    description ??= s.description;
  }
  return { type: typeName(s), required, ...(defaultValue !== undefined ? { defaultValue } : {}), ...(description !== undefined ? { description } : {}) };
}

function typeName(s: z.ZodType): string {
  if (s === boolish) return 'bool';
  if (s === intish) return 'int';
  if (s === duration) return 'duration (sec)';
  if (s === stringList) return 'slice';
  if (s === stringMap) return 'map';
  const d = def(s);
  switch (d.type) {
    case 'string':
    case 'enum':
    case 'literal':
      return 'string';
    case 'number':
    case 'int':
      return 'int';
    case 'boolean':
      return 'bool';
    case 'object':
    case 'record':
      return 'map';
    case 'array':
      return 'slice';
    case 'pipe':
      return typeName(d.in as z.ZodType);
    case 'union': {
      const names = [...new Set((d.options ?? []).map(typeName))];
      return names.length === 1 ? (names[0] as string) : 'unknown';
    }
    default:
      return 'unknown';
  }
}

function objectShape(schema: z.ZodType): Record<string, z.ZodType> {
  const d = def(schema);
  if (d.type !== 'object') return {};
  return (schema as z.ZodObject).shape;
}

/** The path parameters of a pattern: `:name` (one segment) and `*name` (the rest). */
function pathParams(pattern: string): HelpField[] {
  return pattern.split('/').filter((s) => s.startsWith(':') || s.startsWith('*')).map((s) => ({
    name: s.slice(1),
    type: 'string',
    description: s.startsWith(':') ? 'A segment of the path.' : 'The rest of the path.',
    in: 'path',
    required: true,
  }));
}

/** A declared route's help: its operations' summaries and the fields their schemas take. */
export function routeHelp(route: Route): PathHelp {
  const operations: Partial<Record<Operation, string>> = {};
  const fields = new Map<string, HelpField>();
  for (const param of pathParams(route.pattern)) fields.set(param.name, param);
  const notes = new Map<string, string[]>();
  for (const [operation, spec] of Object.entries(route.operations) as [Operation, NonNullable<Route['operations'][Operation]>][]) {
    operations[operation] = spec.summary;
    const where = operation === 'read' || operation === 'list' ? 'query' : 'body';
    for (const [name, schema] of Object.entries(objectShape(spec.fields))) {
      const d = describeSchema(schema);
      const seen = fields.get(name);
      if (seen?.in === 'path') continue;
      const note = `${operation}: ${d.required ? 'required' : d.defaultValue !== undefined ? `default ${JSON.stringify(d.defaultValue)}` : 'optional'}`;
      notes.set(name, [...(notes.get(name) ?? []), note]);
      fields.set(name, {
        name,
        type: seen && seen.type !== d.type ? 'unknown' : d.type,
        description: d.description ?? seen?.description ?? '',
        in: where,
        required: (seen?.required ?? true) && d.required,
      });
    }
  }
  const described = [...fields.values()].map((f) => {
    const taken = notes.get(f.name);
    if (taken === undefined) return f;
    const text = f.description === '' ? '' : `${f.description} `;
    return { ...f, description: `${text}(${taken.join('; ')})` };
  });
  const facts = [
    `Access: ${ACCESS[route.access]}`,
    ...(route.scope === 'node' ? ['Acts on the node as a whole: answers in the root namespace only.'] : []),
    ...(route.whileSealed ? ['Answers while the node is sealed.'] : []),
    ...(route.drSecondary ? ['Answers on a DR secondary.'] : []),
    ...(route.license ? [`Needs the license feature "${route.license.feature}".`] : []),
  ];
  const summaries = [...new Set(Object.values(operations))];
  return {
    pattern: route.pattern,
    synopsis: summaries.length === 1 ? (summaries[0] as string) : summaries.join(' '),
    operations,
    fields: described,
    description: facts.join('\n'),
  };
}

const indent = (text: string, n: number): string => text.split('\n').map((l) => (l === '' ? l : ' '.repeat(n) + l)).join('\n');

/** The help text, after Vault's pathHelpTemplate. */
function helpText(request: string, h: PathHelp): string {
  const out = [`Request:        ${request}`, `Matching Route: ${h.pattern}`, '', h.synopsis || '<no synopsis>', ''];
  const ops = Object.entries(h.operations) as [Operation, string][];
  if (ops.length > 0) {
    out.push('## OPERATIONS', '');
    for (const [op, summary] of ops) out.push(indent(`${op} (${METHODS[op]})`, 4), indent(summary, 8), '');
  }
  if (h.fields.length > 0) {
    out.push('## PARAMETERS', '');
    for (const f of [...h.fields].sort((a, b) => a.name.localeCompare(b.name))) {
      out.push(indent(`${f.name} (${f.type})`, 4), indent(f.description || '<no description>', 8), '');
    }
  }
  out.push('## DESCRIPTION', '', h.description || '<no description>', '');
  return out.join('\n');
}

const OAS_TYPE: Readonly<Record<string, Record<string, unknown>>> = {
  string: { type: 'string' },
  int: { type: 'integer' },
  bool: { type: 'boolean' },
  map: { type: 'object' },
  slice: { type: 'array', items: { type: 'string' } },
  'duration (sec)': { type: 'string', format: 'duration' },
};

/** A one-path OpenAPI 3.0.2 document, after Vault's NewOASDocument/documentPath. */
function openapi(h: PathHelp): Record<string, unknown> {
  const oasPath = `/${h.pattern.split('/').map((s) => (s.startsWith(':') || s.startsWith('*') ? `{${s.slice(1)}}` : s)).join('/')}`;
  const schema = (f: HelpField) => OAS_TYPE[f.type] ?? {};
  const param = (f: HelpField) => ({ name: f.name, description: f.description, in: f.in, schema: schema(f), ...(f.required || f.in === 'path' ? { required: true } : {}) });
  const query = h.fields.filter((f) => f.in === 'query').map(param);
  const bodyFields = h.fields.filter((f) => f.in === 'body');
  const requestBody = bodyFields.length === 0 ? undefined : {
    content: { 'application/json': { schema: { type: 'object', properties: Object.fromEntries(bodyFields.map((f) => [f.name, { ...schema(f), description: f.description }])) } } },
  };
  const responses = { '200': { description: 'OK' } };
  const item: Record<string, unknown> = { description: h.synopsis, parameters: h.fields.filter((f) => f.in === 'path').map(param) };
  const paths: Record<string, unknown> = { [oasPath]: item };
  const ops = h.operations;
  if (ops.read) item.get = { summary: ops.read, parameters: query, responses };
  if (ops.list) {
    const list = { summary: ops.list, parameters: [{ name: 'list', description: 'Must be set to `true`', in: 'query', required: true, schema: { type: 'string', enum: ['true'] } }, ...query], responses };
    if (ops.read) paths[`${oasPath}/`] = { description: h.synopsis, parameters: item.parameters, get: list };
    else item.get = list;
  }
  const write = ops.update ?? ops.create;
  if (write) item.post = { summary: write, ...(requestBody ? { requestBody } : {}), responses };
  if (ops.patch) item.patch = { summary: ops.patch, ...(requestBody ? { requestBody: { content: { 'application/merge-patch+json': requestBody.content['application/json'] } } } : {}), responses };
  if (ops.delete) item.delete = { summary: ops.delete, responses: { '204': { description: 'empty body' } } };
  return {
    openapi: '3.0.2',
    info: {
      title: 'Tessera',
      description: 'HTTP API that gives you full access to Tessera. All API routes are prefixed with `/v1/`.',
      version: VERSION,
      license: { name: 'Mozilla Public License 2.0', url: 'https://www.mozilla.org/en-US/MPL/2.0' },
    },
    paths,
    components: { schemas: {} },
  };
}

/** The body of a help reply for `request` (the namespace-relative path asked about). */
export function helpBody(request: string, help: PathHelp): HelpBody {
  return { help: helpText(request, help), see_also: null, openapi: openapi(help) };
}
