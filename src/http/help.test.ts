import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { boolish, duration, empty, intish, stringList, stringMap } from './fields.js';
import { helpBody, routeHelp, wantsHelp } from './help.js';
import { noContent } from './reply.js';
import { op, type Route } from './route.js';

const none = async () => noContent();

const route: Route = {
  pattern: 'sys/things/:name',
  access: 'sudo',
  scope: 'node',
  operations: {
    read: op(z.object({ version: intish.optional() }), none, 'Read a thing.'),
    list: op(empty, none, 'List the things.'),
    update: op(
      z.object({
        force: boolish.default(false),
        ttl: duration.optional(),
        tags: stringList.nullish(),
        meta: stringMap.optional(),
        mode: z.enum(['a', 'b']),
        note: z.string().describe('What the thing is for.').optional(),
      }).refine(() => true),
      none,
      'Create or update a thing.',
    ),
    delete: op(empty, none, 'Delete a thing.'),
  },
};

describe('wantsHelp', () => {
  it('takes any non-empty help value, as Vault does', () => {
    expect(wantsHelp({ help: '1' })).toBe(true);
    expect(wantsHelp({ help: 'true' })).toBe(true);
    expect(wantsHelp({ help: '' })).toBe(false);
    expect(wantsHelp({ list: 'true' })).toBe(false);
  });
});

describe('routeHelp', () => {
  const h = routeHelp(route);

  it("names each field with Vault's type names, where it goes, and whether it is required", () => {
    const byName = Object.fromEntries(h.fields.map((f) => [f.name, f]));
    expect(Object.keys(byName).sort()).toEqual(['force', 'meta', 'mode', 'name', 'note', 'tags', 'ttl', 'version']);
    expect(byName.name).toMatchObject({ type: 'string', in: 'path', required: true });
    expect(byName.version).toMatchObject({ type: 'int', in: 'query', required: false });
    expect(byName.force).toMatchObject({ type: 'bool', in: 'body', required: false, description: '(update: default false)' });
    expect(byName.ttl).toMatchObject({ type: 'duration (sec)' });
    expect(byName.tags).toMatchObject({ type: 'slice' });
    expect(byName.meta).toMatchObject({ type: 'map' });
    expect(byName.mode).toMatchObject({ type: 'string', required: true, description: '(update: required)' });
    expect(byName.note).toMatchObject({ description: 'What the thing is for. (update: optional)' });
  });

  it("keeps every operation's summary and says who may call the route", () => {
    expect(h.operations).toEqual({ read: 'Read a thing.', list: 'List the things.', update: 'Create or update a thing.', delete: 'Delete a thing.' });
    expect(h.description).toContain('sudo');
    expect(h.description).toContain('root namespace only');
  });
});

describe('helpBody', () => {
  it("is Vault's help object: the text after pathHelpTemplate, no see_also, one OpenAPI path", () => {
    const body = helpBody('sys/things/x', routeHelp(route));
    expect(Object.keys(body)).toEqual(['help', 'see_also', 'openapi']);
    expect(body.see_also).toBeNull();
    const lines = body.help.split('\n');
    expect(lines.slice(0, 2)).toEqual(['Request:        sys/things/x', 'Matching Route: sys/things/:name']);
    expect(body.help).toContain('## OPERATIONS\n\n    read (GET)\n        Read a thing.\n');
    expect(body.help).toContain('## PARAMETERS\n\n    force (bool)\n        (update: default false)\n');
    expect(body.help.indexOf('## DESCRIPTION')).toBeGreaterThan(body.help.indexOf('## PARAMETERS'));

    const paths = body.openapi.paths as Record<string, Record<string, any>>;
    // A read and a list on one path: the list goes to the trailing-slash path, as Vault documents it.
    expect(Object.keys(paths)).toEqual(['/sys/things/{name}', '/sys/things/{name}/']);
    const item = paths['/sys/things/{name}'] as Record<string, any>;
    expect(item.parameters).toEqual([{ name: 'name', description: 'A segment of the path.', in: 'path', schema: { type: 'string' }, required: true }]);
    expect(item.get.summary).toBe('Read a thing.');
    expect(item.get.parameters.map((p: { name: string }) => p.name)).toEqual(['version']);
    expect(Object.keys(item.post.requestBody.content['application/json'].schema.properties).sort()).toEqual(['force', 'meta', 'mode', 'note', 'tags', 'ttl']);
    expect(item.delete.summary).toBe('Delete a thing.');
    expect(paths['/sys/things/{name}/']?.get.parameters[0]).toMatchObject({ name: 'list', in: 'query', required: true });
  });
});
