/**
 * Tokens, ACL policies and response wrapping over HTTP.
 * Runs on LevelDB and on PostgreSQL (forEachEngine, test/support/engines.ts).
 */
import { startTestNode, type TestNode } from '../support/in-process.js';
import { forEachEngine } from '../support/engines.js';

forEachEngine(() => {
  let n: TestNode;
  beforeAll(async () => {
    n = await startTestNode();
    await n.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
  });
  afterAll(async () => n.stop());

  const policy = `
  path "secret/data/team/*" { capabilities = ["create", "read", "update"] }
  path "secret/data/team/+/locked" { capabilities = ["deny"] }
  path "sys/replication/merkle-check" { capabilities = ["update"] }
  path "auth/token/create" { capabilities = ["update"] }
  `;

  describe('policies and tokens', () => {
    it('enforces an HCL policy with globs, +, deny and sudo', async () => {
      expect((await n.call('PUT', 'sys/policies/acl/team', { policy })).status).toBe(204);
      expect((await n.call('GET', 'sys/policies/acl/team')).body.data.policy).toBe(policy);
      expect((await n.call('LIST', 'sys/policies/acl')).body.data.keys).toEqual(expect.arrayContaining(['default', 'root', 'team']));

      const created = await n.call('POST', 'auth/token/create', { policies: 'team', ttl: '1h' });
      expect(created.status).toBe(200);
      const auth = created.body.auth;
      expect(auth.client_token).toMatch(/^hvs\.[0-9A-Za-z]{24}$/);
      expect(auth.policies).toEqual(['default', 'team']);
      expect(auth.lease_duration).toBe(3600);
      const t = auth.client_token as string;

      expect((await n.call('PUT', 'secret/data/team/a', { data: { x: 1 } }, { token: t })).status).toBe(200);
      expect((await n.call('GET', 'secret/data/team/a', undefined, { token: t })).status).toBe(200);
      expect((await n.call('PUT', 'secret/data/team/app/locked', { data: { x: 1 } }, { token: t })).status).toBe(403);
      expect((await n.call('PUT', 'secret/data/other', { data: { x: 1 } }, { token: t })).status).toBe(403);
      expect((await n.call('DELETE', 'secret/data/team/a', undefined, { token: t })).status).toBe(403);
      // Replication endpoints need sudo on their path, not just the capability.
      expect((await n.call('POST', 'sys/replication/merkle-check', {}, { token: t })).status).toBe(403);
      expect((await n.call('GET', 'sys/mounts', undefined, { token: t })).status).toBe(403);

      const self = await n.call('GET', 'auth/token/lookup-self', undefined, { token: t });
      expect(self.body.data).toMatchObject({ id: t, policies: ['default', 'team'], accessor: auth.accessor, type: 'service' });
      expect(self.body.data.ttl).toBeGreaterThan(3500);

      // Children cannot escalate.
      const escalate = await n.call('POST', 'auth/token/create', { policies: ['root'] }, { token: t });
      expect(escalate.status).toBe(400);
      expect((await n.call('POST', 'auth/token/create', { policies: ['team', 'admin'] }, { token: t })).status).toBe(400);
    });

    it('applies a policy change to tokens already in use', async () => {
      await n.call('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/data/shared" { capabilities = ["read"] }' });
      const t = (await n.call('POST', 'auth/token/create', { policies: ['reader'] })).body.auth.client_token;
      await n.call('PUT', 'secret/data/shared', { data: { v: 1 } });
      expect((await n.call('GET', 'secret/data/shared', undefined, { token: t })).status).toBe(200);
      await n.call('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/data/other" { capabilities = ["read"] }' });
      expect((await n.call('GET', 'secret/data/shared', undefined, { token: t })).status).toBe(403);
      await n.call('DELETE', 'sys/policies/acl/reader');
      expect((await n.call('GET', 'secret/data/other', undefined, { token: t })).status).toBe(403);
    });

    it('spends no use of a token on a request its policies refuse', async () => {
      const limited = (await n.call('POST', 'auth/token/create', { policies: ['default'], num_uses: 3 })).body.auth.client_token;
      for (let i = 0; i < 5; i++) {
        expect((await n.call('GET', 'secret/data/forbidden', undefined, { token: limited })).status).toBe(403);
        expect((await n.call('POST', 'sys/policies/acl/x', { policy: '' }, { token: limited })).status).toBe(403);
      }
      const self = await n.call('GET', 'auth/token/lookup-self', undefined, { token: limited });
      expect(self.status).toBe(200);
      expect(self.body.data.num_uses).toBe(2);
    });

    it('limits uses, revokes trees, and looks up by accessor', async () => {
      const limited = (await n.call('POST', 'auth/token/create', { policies: ['default'], num_uses: 2 })).body.auth.client_token;
      expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: limited })).status).toBe(200);
      expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: limited })).status).toBe(200);
      expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: limited })).status).toBe(403);

      const parent = (await n.call('POST', 'auth/token/create', { policies: ['team'] })).body.auth;
      const child = (await n.call('POST', 'auth/token/create', { policies: ['team'] }, { token: parent.client_token })).body.auth;
      const acc = await n.call('POST', 'auth/token/lookup-accessor', { accessor: child.accessor });
      expect(acc.body.data.policies).toEqual(['default', 'team']);
      expect(acc.body.data.id).toBe('');
      expect((await n.call('POST', 'auth/token/revoke', { token: parent.client_token })).status).toBe(204);
      expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: child.client_token })).status).toBe(403);
    });
  });

  describe('response wrapping', () => {
    it('wraps a token creation, unwraps it once, and looks it up without consuming', async () => {
      const wrapped = await n.call('POST', 'auth/token/create', { policies: ['default'] }, { headers: { 'X-Vault-Wrap-TTL': '5m' } });
      expect(wrapped.status).toBe(200);
      expect(wrapped.body.data).toBeNull();
      expect(wrapped.body.auth).toBeNull();
      const info = wrapped.body.wrap_info;
      expect(info).toMatchObject({ ttl: 300, creation_path: 'auth/token/create' });
      expect(info.token).toMatch(/^hvs\./);
      expect(info.wrapped_accessor).not.toBe('');

      const look = await n.call('POST', 'sys/wrapping/lookup', { token: info.token }, { token: null });
      expect(look.body.data).toMatchObject({ creation_path: 'auth/token/create', creation_ttl: 300 });
      const un = await n.call('POST', 'sys/wrapping/unwrap', {}, { token: info.token });
      expect(un.status).toBe(200);
      expect(un.body.auth.client_token).toMatch(/^hvs\./);
      expect(un.body.auth.accessor).toBe(info.wrapped_accessor);
      expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: un.body.auth.client_token })).status).toBe(200);

      const again = await n.call('POST', 'sys/wrapping/unwrap', { token: info.token }, { token: null });
      expect(again.status).toBe(400);
      expect(again.body.errors[0]).toMatch(/wrapping token is not valid/);
    });

    it('wraps arbitrary data with sys/wrapping/wrap and wraps KV reads', async () => {
      const w = await n.call('POST', 'sys/wrapping/wrap', { hello: 'world' }, { headers: { 'X-Vault-Wrap-TTL': '60' } });
      const un = await n.call('POST', 'sys/wrapping/unwrap', { token: w.body.wrap_info.token }, { token: null });
      expect(un.body.data).toEqual({ hello: 'world' });
      await n.call('PUT', 'secret/data/wrapped', { data: { s: 'x' } });
      const r = await n.call('GET', 'secret/data/wrapped', undefined, { headers: { 'X-Vault-Wrap-TTL': '60' } });
      const data = await n.call('POST', 'sys/wrapping/unwrap', { token: r.body.wrap_info.token }, { token: null });
      expect(data.body.data.data).toEqual({ s: 'x' });
    });
  });
});
