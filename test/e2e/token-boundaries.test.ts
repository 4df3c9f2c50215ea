/**
 * Issue 6 items 2 and 4 on real node processes: a child-namespace token cannot look up or revoke
 * tokens above its namespace (the root token included), and token TTLs are bounded by the
 * system's max_lease_ttl, capped with Vault's warning, so every token stays usable and revocable.
 * Build first: `npm run build`.
 */
import { initAndUnseal, useHarness, vault, type Reply, type StartedNode, type VaultHttp } from '../harness/index.js';

const h = useHarness();
const H768 = 768 * 3600;

/** What a caller gets back, without the per-request id. */
const answer = (r: Reply) => ({ status: r.status, body: r.body });

describe('namespace boundaries of auth/token endpoints', () => {
  let node: StartedNode;
  let root: VaultHttp;
  let rootToken: string;

  beforeAll(async () => {
    node = await h.startNode({ dev: true });
    rootToken = node.rootToken!;
    root = vault(node.apiAddr, rootToken);
  });

  it('refuses a child-namespace admin every token above its namespace, as if unknown, and spares them', async () => {
    const nsx = { headers: { 'X-Vault-Namespace': 'nsx' } };
    const nsxChild = { headers: { 'X-Vault-Namespace': 'nsx/child' } };
    expect((await root.post('sys/namespaces/nsx', {})).status).toBe(200);
    expect((await root.post('sys/namespaces/child', {}, nsx)).status).toBe(200);
    // Everything on auth/token/*, in nsx and (paths relative to nsx) in nsx/child.
    const all = '{ capabilities = ["create", "read", "update", "delete", "list", "sudo"] }';
    const policy = `path "auth/token/*" ${all}\npath "child/auth/token/*" ${all}`;
    expect((await root.put('sys/policies/acl/token-admin', { policy }, nsx)).status).toBe(204);
    const admin = await root.post('auth/token/create', { policies: ['token-admin'], ttl: '1h' }, nsx);
    expect(admin.status).toBe(200);
    const attacker = vault(node.apiAddr, admin.body.auth.client_token);

    const rootAccessor = (await root.get('auth/token/lookup-self')).body.data.accessor as string;
    const victim = (await root.post('auth/token/create', { policies: ['default'], ttl: '1h' })).body.auth;
    const unknown = { token: `hvs.${'x'.repeat(24)}`, accessor: 'y'.repeat(24) };

    for (const scope of [nsx, nsxChild]) {
      const unknownLookup = answer(await attacker.post('auth/token/lookup', { token: unknown.token }, scope));
      const unknownAccessor = answer(await attacker.post('auth/token/lookup-accessor', { accessor: unknown.accessor }, scope));
      expect(unknownLookup).toEqual({ status: 403, body: { errors: ['bad token'] } });
      expect(unknownAccessor).toEqual({ status: 400, body: { errors: ['invalid accessor'] } });
      for (const [token, accessor] of [[rootToken, rootAccessor], [victim.client_token, victim.accessor]] as const) {
        expect(answer(await attacker.post('auth/token/lookup', { token }, scope))).toEqual(unknownLookup);
        expect(answer(await attacker.post('auth/token/lookup-accessor', { accessor }, scope))).toEqual(unknownAccessor);
        // A renewal of another namespace's token answers exactly as one of an unknown token.
        for (const [path, body, unknownBody] of [
          ['auth/token/renew', { token, increment: '2h' }, { token: unknown.token, increment: '2h' }],
          ['auth/token/renew-accessor', { accessor, increment: '2h' }, { accessor: unknown.accessor, increment: '2h' }],
        ] as const) {
          const refused = answer(await attacker.post(path, body, scope));
          expect(refused).toEqual(answer(await attacker.post(path, unknownBody, scope)));
          expect(refused).toEqual({ status: 400, body: { errors: ['token not found'] } });
        }
        // Revocations answer as for an unknown token (Vault's "revoked, if it existed") and revoke nothing.
        for (const [path, body, unknownBody] of [
          ['auth/token/revoke', { token }, { token: unknown.token }],
          ['auth/token/revoke-orphan', { token }, { token: unknown.token }],
          ['auth/token/revoke-accessor', { accessor }, { accessor: unknown.accessor }],
        ] as const) {
          const refused = answer(await attacker.post(path, body, scope));
          expect(refused).toEqual(answer(await attacker.post(path, unknownBody, scope)));
          expect(refused.status).toBe(204);
        }
      }
    }

    // Nothing above nsx was touched: the root token and the root-namespace token still work.
    expect((await root.get('auth/token/lookup-self')).status).toBe(200);
    expect((await root.get('sys/mounts')).status).toBe(200);
    expect((await vault(node.apiAddr, victim.client_token).get('auth/token/lookup-self')).body.data.accessor).toBe(victim.accessor);
    expect((await root.post('auth/token/lookup', { token: victim.client_token })).status).toBe(200);
    expect((await root.post('auth/token/lookup', { token: victim.client_token })).body.data.ttl).toBeLessThanOrEqual(3600);

    // Within its namespace and below, the admin still does its job.
    const own = (await attacker.post('auth/token/create', { policies: ['default'] }, nsx)).body.auth;
    const below = (await attacker.post('auth/token/create', { policies: ['default'] }, nsxChild)).body.auth;
    expect((await attacker.post('auth/token/lookup', { token: own.client_token }, nsx)).body.data.accessor).toBe(own.accessor);
    expect((await attacker.post('auth/token/lookup', { token: below.client_token }, nsx)).body.data.accessor).toBe(below.accessor);
    expect((await attacker.post('auth/token/lookup-accessor', { accessor: below.accessor }, nsx)).status).toBe(200);
    expect((await attacker.post('auth/token/revoke-accessor', { accessor: below.accessor }, nsx)).status).toBe(204);
    expect((await attacker.post('auth/token/revoke', { token: own.client_token }, nsx)).status).toBe(204);
    for (const gone of [own.client_token, below.client_token]) {
      expect((await root.post('auth/token/lookup', { token: gone })).body).toEqual({ errors: ['bad token'] });
    }
    expect((await root.get('auth/token/lookup-self')).status).toBe(200);
  });
});

describe('token TTLs bounded by max_lease_ttl', () => {
  it('caps a huge ttl at 768h with a warning; the tokens work and revoke, and an unrepresentable ttl is a 400', async () => {
    const node = await h.startNode({ dev: true });
    const root = vault(node.apiAddr, node.rootToken!);
    const policy = 'path "auth/token/create" { capabilities = ["update"] }';
    expect((await root.put('sys/policies/acl/maker', { policy })).status).toBe(204);

    const parent = await root.post('auth/token/create', { policies: ['maker'], ttl: '1000000h' });
    expect(parent.status).toBe(200);
    expect(parent.body.warnings).toEqual(['TTL of "1000000h0m0s" exceeded the effective max_ttl of "768h0m0s"; TTL value is capped accordingly']);
    expect(parent.body.auth.lease_duration).toBe(H768);
    const p = vault(node.apiAddr, parent.body.auth.client_token);

    const child = await p.post('auth/token/create', { policies: ['maker'], ttl: '1000000h', explicit_max_ttl: '2000000h' });
    expect(child.status).toBe(200);
    expect(child.body.warnings).toHaveLength(2);
    expect(child.body.auth.lease_duration).toBeLessThanOrEqual(H768);
    const c = vault(node.apiAddr, child.body.auth.client_token);
    const self = await c.get('auth/token/lookup-self');
    expect(self.status).toBe(200);
    expect(self.body.data.ttl).toBeLessThanOrEqual(H768);
    expect(self.body.data.explicit_max_ttl).toBe(H768);

    const grandchild = (await c.post('auth/token/create', { policies: ['maker'] })).body.auth.client_token as string;
    expect((await c.post('auth/token/revoke-self', {})).status).toBe(204);
    expect((await c.get('auth/token/lookup-self')).status).toBe(403);
    expect((await vault(node.apiAddr, grandchild).get('auth/token/lookup-self')).status).toBe(403);

    const sibling = (await p.post('auth/token/create', { policies: ['maker'], ttl: '1000000h' })).body.auth.client_token as string;
    expect((await root.post('auth/token/revoke', { token: parent.body.auth.client_token })).status).toBe(204);
    expect((await p.get('auth/token/lookup-self')).status).toBe(403);
    expect((await vault(node.apiAddr, sibling).get('auth/token/lookup-self')).status).toBe(403);

    for (const field of ['ttl', 'explicit_max_ttl']) {
      const tooBig = await root.post('auth/token/create', { policies: ['maker'], [field]: '99999999999999h' });
      expect(tooBig.status).toBe(400);
      expect(tooBig.body.errors).toEqual([expect.stringContaining('duration')]);
    }
    expect((await root.get('auth/token/lookup-self')).status).toBe(200);
  });

  it('applies a configured max_lease_ttl, to asked and default TTLs alike', async () => {
    const node = await h.startNode({ leases: { maxLeaseTtl: '1h' } });
    const { rootToken } = await initAndUnseal(node.apiAddr);
    const root = vault(node.apiAddr, rootToken);

    const capped = await root.post('auth/token/create', { policies: ['default'], ttl: '2h' });
    expect(capped.status).toBe(200);
    expect(capped.body.warnings).toEqual(['TTL of "2h0m0s" exceeded the effective max_ttl of "1h0m0s"; TTL value is capped accordingly']);
    expect(capped.body.auth.lease_duration).toBe(3600);
    const plain = await root.post('auth/token/create', { policies: ['default'] });
    expect(plain.body.auth.lease_duration).toBe(3600);
    expect(plain.body.warnings).toBeNull();
    expect((await root.post('auth/token/revoke', { token: capped.body.auth.client_token })).status).toBe(204);
  });
});
