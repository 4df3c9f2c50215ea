/**
 * Issue 18 item 6: path help. Every declared operation has a one-line summary, and
 * `GET /v1/<path>?help=1` answers Vault's help object (`help`, `see_also`, `openapi`) for the route
 * a path matches, for a KV mount's paths too; `tessera path-help` prints it.
 */
import type { Route } from '../../src/http/route.js';
import { approleRoutes } from '../../src/http/routes/auth-approle.js';
import { userpassRoutes } from '../../src/http/routes/auth-userpass.js';
import { runCli } from '../../src/cli/testing/run-cli.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;

beforeAll(async () => {
  n = await startTestNode();
  expect((await n.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
  expect((await n.call('POST', 'sys/mounts/kv1', { type: 'kv', options: { version: '1' } })).status).toBe(204);
  expect((await n.call('POST', 'sys/auth/up', { type: 'userpass' })).status).toBe(204);
  expect((await n.call('PUT', 'sys/policies/acl/nothing', { policy: 'path "nowhere" { capabilities = ["read"] }' })).status).toBe(204);
}, 30_000);

afterAll(async () => {
  await n.stop();
});

/** Every route a node declares, with the routes of the auth methods it can mount (chosen at request time). */
function everyRoute(): Route[] {
  return [...n.node.routes, ...userpassRoutes('auth/userpass/', {} as never), ...approleRoutes('auth/approle/', {} as never)];
}

describe('route summaries', () => {
  it('every operation of every declared route has a one-line summary', () => {
    const bad: string[] = [];
    let count = 0;
    for (const route of everyRoute()) {
      for (const [operation, spec] of Object.entries(route.operations)) {
        count++;
        const s = spec?.summary ?? '';
        if (s.trim() === '' || s !== s.trim() || s.includes('\n') || s.length > 160 || !s.endsWith('.')) bad.push(`${operation} ${route.pattern}: ${JSON.stringify(s)}`);
      }
    }
    expect(bad).toEqual([]);
    expect(count).toBeGreaterThan(60);
  });
});

describe('GET ?help=1', () => {
  it('answers a sys path with its operations and fields, bare, in Vault shape', async () => {
    const r = await n.call('GET', 'sys/policies/acl/ops?help=1');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['help', 'openapi', 'see_also']);
    expect(r.body.see_also).toBeNull();
    const help: string = r.body.help;
    expect(help).toContain('Request:        sys/policies/acl/ops');
    expect(help).toContain('Matching Route: sys/policies/acl/:name');
    expect(help).toContain('Read an access control policy.');
    expect(help).toContain('Create or update an access control policy.');
    expect(help).toMatch(/ {4}policy \(string\)\n {8}\(update: required\)/);
    expect(help).toMatch(/ {4}name \(string\)/);
    const paths = r.body.openapi.paths;
    expect(r.body.openapi.openapi).toBe('3.0.2');
    expect(Object.keys(paths)).toEqual(['/sys/policies/acl/{name}']);
    expect(paths['/sys/policies/acl/{name}'].post.requestBody.content['application/json'].schema.properties.policy.type).toBe('string');
  });

  it('answers a replication path: defaults, types and the access rule', async () => {
    const r = await n.call('GET', 'sys/replication/dr/secondary/promote?help=1');
    expect(r.status).toBe(200);
    expect(r.body.help).toContain('Promote this DR secondary to a primary.');
    expect(r.body.help).toMatch(/ {4}force \(bool\)\n {8}\(update: default false\)/);
    expect(r.body.help).toMatch(/ {4}dr_operation_token \(string\)/);
    expect(r.body.help).toContain('Access: Authorized by a credential in the body');
    expect(r.body.help).toContain('root namespace only');
  });

  it('answers KV v2 paths from the engine, and the mount itself with its overview', async () => {
    const data = await n.call('GET', 'secret/data/app/db?help=1');
    expect(data.status).toBe(200);
    expect(data.body.help).toContain('Matching Route: secret/data/*path');
    expect(data.body.help).toContain('Write, Patch, Read, and Delete data in the Key-Value Store.');
    expect(data.body.help).toMatch(/ {4}version \(int\)/);
    expect(Object.keys(data.body.openapi.paths)).toEqual(['/secret/data/{path}']);
    const meta = await n.call('GET', 'secret/metadata/?help=1');
    expect(meta.body.help).toContain('Matching Route: secret/metadata/*path');
    for (const p of ['secret?help=1', 'secret/nonsense?help=1']) {
      const root = await n.call('GET', p);
      expect(root.status).toBe(200);
      expect(root.body.help).toContain('## PATHS');
      expect(root.body.help).toContain('destroy/*path');
    }
  });

  it('answers a KV v1 mount and an auth method mount', async () => {
    const v1 = await n.call('GET', 'kv1/a/b?help=1');
    expect(v1.status).toBe(200);
    expect(v1.body.help).toContain('Matching Route: kv1/*path');
    expect(v1.body.help).toContain('Pass-through secret storage');
    const up = await n.call('GET', 'auth/up/users/ada?help=1');
    expect(up.status).toBe(200);
    expect(up.body.help).toContain('Matching Route: auth/up/users/:username');
  });

  it('answers in a namespace, by header or path prefix; node routes only in the root namespace', async () => {
    expect((await n.call('POST', 'sys/namespaces/team')).status).toBe(200);
    const ns = { headers: { 'X-Vault-Namespace': 'team' } };
    expect((await n.call('POST', 'sys/mounts/kvt', { type: 'kv', options: { version: '2' } }, ns)).status).toBe(204);
    const byHeader = await n.call('GET', 'kvt/metadata/a?help=1', undefined, ns);
    expect(byHeader.status).toBe(200);
    expect(byHeader.body.help).toContain('Matching Route: kvt/metadata/*path');
    const byPrefix = await n.call('GET', 'team/sys/policies/acl/x?help=1');
    expect(byPrefix.body.help).toContain('Request:        sys/policies/acl/x');
    const node = await n.call('GET', 'sys/replication/dr/primary/enable?help=1', undefined, ns);
    expect(node.status).toBe(400);
    expect(node.body.errors[0]).toContain('restricted to the root namespace');
  });

  it('an unknown path is a 404 in the errors shape', async () => {
    for (const p of ['sys/nothing-here', 'nomount/x', 'auth/nomethod/login']) {
      const r = await n.call('GET', `${p}?help=1`);
      expect(r.status).toBe(404);
      expect(Array.isArray(r.body.errors)).toBe(true);
      expect(r.body.errors.length).toBe(1);
    }
  });

  it('needs a valid token, as in Vault, but no capability on the path (sudo paths too)', async () => {
    for (const p of ['sys/policies/acl/ops', 'secret/data/a', 'sys/nothing-here', 'nomount/x']) {
      const r = await n.call('GET', `${p}?help=1`, undefined, { token: null });
      expect(r.status).toBe(403);
      expect(r.body.errors).toEqual([expect.stringMatching(/^permission denied/)]);
    }
    expect((await n.call('GET', 'sys/policies/acl/ops?help=1', undefined, { token: 'hvs.not-a-token' })).status).toBe(403);
    const created = await n.call('POST', 'auth/token/create', { policies: ['nothing'] });
    const weak: string = created.body.auth.client_token;
    for (const p of ['sys/replication/dr/primary/enable', 'sys/mounts/x', 'secret/data/a']) {
      expect((await n.call('GET', `${p}?help=1`, undefined, { token: weak })).status).toBe(200);
    }
    // The same token may not use the paths it reads the help of.
    expect((await n.call('GET', 'sys/mounts/x', undefined, { token: weak })).status).toBe(403);
  });

  it("answers Vault's unauthenticated paths without a token: public routes, logins, DR operation-token routes", async () => {
    for (const p of ['sys/health', 'sys/seal-status', 'sys/replication/status', 'auth/up/login/ada', 'sys/replication/dr/secondary/promote']) {
      const r = await n.call('GET', `${p}?help=1`, undefined, { token: null });
      expect({ p, status: r.status }).toEqual({ p, status: 200 });
      expect(r.body.help).toContain(`Request:        ${p}`);
    }
  });
});

describe('tessera path-help', () => {
  const env = () => ({ TESSERA_ADDR: n.apiAddr, TESSERA_TOKEN: n.rootToken });

  it('prints the help text, or the OpenAPI document with -format=json', async () => {
    const r = await runCli(['path-help', 'sys/mounts/secret'], { env: env() });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('Matching Route: sys/mounts/*path');
    expect(r.stdout).toContain('Enable a new secrets engine at this path.');
    const j = await runCli(['path-help', '-format=json', 'secret/data/x'], { env: env() });
    expect(j.code).toBe(0);
    expect(Object.keys(JSON.parse(j.stdout).paths)).toEqual(['/secret/data/{path}']);
  });

  it('exits 2 with Vault\'s message for an unknown path or without a token', async () => {
    const r = await runCli(['path-help', 'nomount/x'], { env: env() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Error retrieving help:');
    const anon = await runCli(['path-help', 'sys/mounts'], { env: { TESSERA_ADDR: n.apiAddr, HOME: n.dataDir } });
    expect(anon.code).toBe(2);
    expect(anon.stderr).toContain('permission denied');
  });
});
