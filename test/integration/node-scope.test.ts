/**
 * Issue 6 items 1 and 9: endpoints that act on the node as a whole answer only in the root
 * namespace. The cases are generated from the node's own route declarations (every route with
 * `scope: 'node'`, every operation it has), so a new node-wide route is covered by declaring it.
 */
import type { Operation } from '../../src/vault/logical.js';
import type { Route } from '../../src/http/route.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const METHOD: Readonly<Record<Operation, string>> = { read: 'GET', list: 'LIST', create: 'POST', update: 'POST', delete: 'DELETE', patch: 'PATCH' };

/**
 * Routes that stay callable from a namespace: the namespace's own resources, and the node's
 * public read-only state that Vault also serves everywhere (seal status, health, leader,
 * replication status: spec section 1.5 exempts the two status endpoints). Any other route must
 * declare `scope: 'node'`; the exhaustiveness test below fails when a new one forgets to.
 */
const NAMESPACE_OR_OPEN = new Set([
  'sys/init', 'sys/unseal', 'sys/seal-status', 'sys/health', 'sys/leader',
  'sys/replication/status', 'sys/replication/dr/status', 'sys/replication/performance/status',
  'sys/wrapping/unwrap', 'sys/wrapping/lookup', 'sys/wrapping/wrap',
  'auth/token/create', 'auth/token/create-orphan', 'auth/token/lookup-self', 'auth/token/lookup', 'auth/token/lookup-accessor',
  'auth/token/renew', 'auth/token/renew-self', 'auth/token/renew-accessor', 'auth/token/roles', 'auth/token/roles/:name', 'auth/token/create/:role',
  'auth/token/revoke', 'auth/token/revoke-self', 'auth/token/revoke-accessor', 'auth/token/revoke-orphan',
  'sys/policies/acl', 'sys/policies/acl/:name', 'sys/policy', 'sys/policy/:name',
  'sys/namespaces', 'sys/namespaces/*path', 'sys/mounts', 'sys/mounts/*path',
  'sys/auth', 'sys/auth/*path', 'auth/*path',
  'cubbyhole', 'cubbyhole/*path',
]);

const concrete = (pattern: string) => pattern.replace(/[:*][a-z_]+/g, 'x');

let n: TestNode;
let nsToken: string;
const ADMIN = `
path "*" { capabilities = ["create", "read", "update", "delete", "list", "patch", "sudo"] }
path "sys/*" { capabilities = ["create", "read", "update", "delete", "list", "patch", "sudo"] }
`;

beforeAll(async () => {
  n = await startTestNode();
  expect((await n.call('POST', 'sys/namespaces/nsx')).status).toBe(200);
  const ns = { headers: { 'X-Vault-Namespace': 'nsx' } };
  expect((await n.call('PUT', 'sys/policies/acl/admin', { policy: ADMIN }, ns)).status).toBe(204);
  const created = await n.call('POST', 'auth/token/create', { policies: ['admin'], num_uses: 1000 }, ns);
  expect(created.status).toBe(200);
  nsToken = created.body.auth.client_token;
  // The token really is its namespace's admin: it can manage the namespace's own policies.
  expect((await n.call('PUT', 'sys/policies/acl/other', { policy: 'path "a" { capabilities = ["read"] }' }, { ...ns, token: nsToken })).status).toBe(204);
}, 30_000);

afterAll(async () => {
  await n.stop();
});

const nodeRoutes = (): Route[] => n.node.routes.filter((r) => r.scope === 'node');

describe('node-wide routes', () => {
  it('are declared for every endpoint that acts on the node (seal, metrics, license, replication, storage)', () => {
    const node = new Set(nodeRoutes().map((r) => r.pattern));
    for (const p of ['sys/seal', 'sys/metrics', 'sys/license/status', 'sys/replication/reindex', 'sys/replication/merkle-check',
      'sys/replication/dr/primary/enable', 'sys/replication/dr/primary/demote', 'sys/replication/dr/secondary/promote',
      'sys/replication/dr/secondary/generate-operation-token/attempt', 'sys/replication/dr/secondary/operation-token/delete',
      'sys/generate-root/attempt', 'sys/generate-root/update']) {
      expect(node).toContain(p);
    }
    const undeclared = n.node.routes.filter((r) => r.scope !== 'node' && !NAMESPACE_OR_OPEN.has(r.pattern)).map((r) => r.pattern);
    expect(undeclared).toEqual([]);
  });

  it('refuse a child-namespace admin (sudo on * and sys/*) by header and by path prefix, spending and changing nothing', async () => {
    const engine = n.node.engine;
    const before = {
      merkle: engine.merkleRoot().toString('hex'),
      wal: engine.lastGuard().index,
      replication: (await n.call('GET', 'sys/replication/status', undefined, { token: null })).body.data,
      uses: (await n.call('POST', 'auth/token/lookup', { token: nsToken })).body.data.num_uses,
    };
    expect(before.uses).toBeGreaterThan(0);

    const cases = nodeRoutes().flatMap((r) => (Object.keys(r.operations) as Operation[]).map((op) => ({ path: concrete(r.pattern), op })));
    expect(cases.length).toBeGreaterThan(15);
    for (const { path, op } of cases) {
      const body = op === 'read' || op === 'list' || op === 'delete' ? undefined : {};
      const byHeader = await n.call(METHOD[op], path, body, { token: nsToken, headers: { 'X-Vault-Namespace': 'nsx' } });
      const byPrefix = await n.call(METHOD[op], `nsx/${path}`, body, { token: nsToken });
      for (const [how, r] of [['header', byHeader], ['prefix', byPrefix]] as const) {
        expect({ how, op, path, status: r.status, errors: r.body?.errors }).toEqual({
          how, op, path, status: 400, errors: [expect.stringMatching(/restricted to the root namespace/)],
        });
      }
    }

    const health = await n.call('GET', 'sys/seal-status', undefined, { token: null });
    expect(health.body.sealed).toBe(false);
    expect(engine.merkleRoot().toString('hex')).toBe(before.merkle);
    expect(engine.lastGuard().index).toBe(before.wal);
    expect((await n.call('GET', 'sys/replication/status', undefined, { token: null })).body.data).toEqual(before.replication);
    // Refused before authentication: not one use of the token was spent.
    expect((await n.call('POST', 'auth/token/lookup', { token: nsToken })).body.data.num_uses).toBe(before.uses);
  }, 60_000);

  it('the issue as filed: a token of nsx with update and sudo on sys/* cannot seal the node', async () => {
    const ns = { headers: { 'X-Vault-Namespace': 'nsx' } };
    await n.call('PUT', 'sys/policies/acl/sealer', { policy: 'path "sys/*" { capabilities = ["update", "sudo"] }' }, ns);
    const token = (await n.call('POST', 'auth/token/create', { policies: ['sealer'] }, ns)).body.auth.client_token as string;
    expect((await n.call('PUT', 'sys/seal', undefined, { token, headers: ns.headers })).status).toBe(400);
    expect((await n.call('PUT', 'nsx/sys/seal', undefined, { token })).status).toBe(400);
    expect((await n.call('PUT', 'sys/seal', undefined, { token })).status).toBe(403);
    expect((await n.call('GET', 'sys/seal-status', undefined, { token: null })).body.sealed).toBe(false);
  });

  it('still answer the root namespace (metrics and license status with the root token)', async () => {
    const metrics = await n.call('GET', 'sys/metrics?format=prometheus');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/^# (HELP|TYPE) /m);
    expect((await n.call('GET', 'sys/license/status')).status).toBe(200);
    expect((await n.call('GET', 'sys/metrics', undefined, { headers: { 'X-Vault-Namespace': 'nsx' } })).status).toBe(400);
  });
});
