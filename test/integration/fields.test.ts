/**
 * Issue 7 items 4 and 5: one field machinery for every route. JSON null means "not set"; a
 * missing field says it is missing, a wrong type names the expected type, an unknown body field
 * is a warning. The null test is generated from the node's own route declarations.
 */
import { z } from 'zod';
import { isTesseraError } from '../../src/core/errors.js';
import { parseFields } from '../../src/http/fields.js';
import { mountBodies } from '../../src/http/routes/mounts.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;

beforeAll(async () => {
  n = await startTestNode();
}, 30_000);

afterAll(async () => {
  await n.stop();
});

/** Every object schema a route validates with: the declared ones, and the two mounts picks by path. */
function objectSchemas(): { where: string; schema: z.ZodObject }[] {
  const out: { where: string; schema: z.ZodObject }[] = [];
  for (const r of n.node.routes) {
    for (const [op, spec] of Object.entries(r.operations)) {
      if (spec?.fields instanceof z.ZodObject) out.push({ where: `${op} ${r.pattern}`, schema: spec.fields });
    }
  }
  out.push({ where: 'update sys/mounts/*path', schema: mountBodies.enable }, { where: 'update sys/mounts/*path/tune', schema: mountBodies.tune });
  return out;
}

describe('JSON null', () => {
  it('is "not set" for every optional field of every route; only required fields may then be reported missing', () => {
    const schemas = objectSchemas();
    expect(schemas.length).toBeGreaterThan(25);
    let optionalFields = 0;
    for (const { where, schema } of schemas) {
      const shape = schema.shape as Record<string, z.ZodType>;
      const required = Object.keys(shape).filter((k) => !shape[k]!.safeParse(undefined).success);
      expect(required.every((k) => shape[k]!.safeParse(null).success === false)).toBe(true);
      optionalFields += Object.keys(shape).length - required.length;
      const allNull = Object.fromEntries(Object.keys(shape).map((k) => [k, null]));
      let messages: string[] = [];
      try {
        parseFields(schema, allNull, { warnUnknown: true });
      } catch (e) {
        if (!isTesseraError(e) || e.code !== 'invalid_request') throw e;
        messages = e.messages;
      }
      // A failure may only be a field reported missing (required, or one of a required pair), never a type error about null.
      const missing = Object.keys(shape).map((k) => `missing required field "${k}"`);
      expect({ where, messages: messages.filter((m) => !missing.includes(m)) }).toEqual({ where, messages: [] });
    }
    expect(optionalFields).toBeGreaterThan(40);
  });

  it('lets hvac enable mounts exactly as it sends them (kv v1 and v2)', async () => {
    const hvacBody = (options: Record<string, string> | null) => ({
      type: 'kv', description: null, config: null, options, plugin_name: null, local: false, seal_wrap: false, external_entropy_access: false,
    });
    const v1 = await n.call('POST', 'sys/mounts/hvac-v1', hvacBody(null));
    expect([200, 204]).toContain(v1.status);
    const v2 = await n.call('POST', 'sys/mounts/hvac-v2', hvacBody({ version: '2' }));
    expect([200, 204]).toContain(v2.status);
    const mounts = (await n.call('GET', 'sys/mounts')).body.data;
    expect(mounts['hvac-v1/']).toMatchObject({ type: 'kv', description: '' });
    expect(mounts['hvac-v2/'].options).toEqual({ version: '2' });
    expect((await n.call('POST', 'sys/mounts/hvac-v1/tune', { description: null, default_lease_ttl: null, max_lease_ttl: '1h' })).status).toBe(204);
  });

  it('is "not set" through HTTP for a declared route too (token create with null optional fields)', async () => {
    const r = await n.call('POST', 'auth/token/create', { policies: ['default'], ttl: null, meta: null, display_name: null, num_uses: null, renewable: null });
    expect(r.status).toBe(200);
    expect(r.body.auth.policies).toEqual(['default']);
  });
});

describe('field errors', () => {
  it('say "missing" for a missing field and name the expected type for a wrong one', async () => {
    const missing = await n.call('POST', 'auth/token/lookup', {});
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual(['missing required field "token"']);
    const wrong = await n.call('POST', 'auth/token/lookup', { token: 123 });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual(['field "token": expected string, received number']);
    const wrongId = await n.call('POST', 'sys/replication/dr/primary/revoke-secondary', { id: 123 });
    expect(wrongId.body.errors).toEqual(['field "id": expected string, received number']);
    const noId = await n.call('POST', 'sys/replication/dr/primary/revoke-secondary', {});
    expect(noId.body.errors).toEqual(['missing required field "id"']);
    const badBool = await n.call('POST', 'sys/mounts/typed', { type: 'kv', local: [] });
    expect(badBool.status).toBe(400);
    expect(badBool.body.errors).toEqual(['field "local": expected boolean or string, received array']);
    const badWord = await n.call('POST', 'sys/mounts/typed', { type: 'kv', local: 'maybe' });
    expect(badWord.body.errors).toEqual([expect.stringMatching(/^field "local": Invalid option: expected one of .*"true"\|"false"/)]);
  });

  it('turn unknown body fields into a warning, as Vault does, and still do the work', async () => {
    const created = await n.call('POST', 'auth/token/create', { policies: ['default'], bogus: 1, also: 'x' });
    expect(created.status).toBe(200);
    expect(created.body.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [also bogus]']);
    const policy = await n.call('PUT', 'sys/policies/acl/warned', { policy: 'path "a" { capabilities = ["read"] }', extra: true });
    expect(policy.status).toBe(200);
    expect(policy.body.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [extra]']);
    expect((await n.call('GET', 'sys/policies/acl/warned')).status).toBe(200);
    // Known fields alone: no warning, and 204 stays 204.
    expect((await n.call('PUT', 'sys/policies/acl/plain', { policy: 'path "a" { capabilities = ["read"] }' })).status).toBe(204);
  });
});
