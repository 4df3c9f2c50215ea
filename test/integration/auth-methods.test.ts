/**
 * Issue 8 item 2.4: auth methods over HTTP on an in-process node. sys/auth enable, list, read,
 * disable; userpass users and login; approle roles, role IDs, secret IDs and login; namespaced
 * mounts; and where each lives in the keyspace (replicated class unless `local`, tokens local).
 */
import { hashToken } from '../../src/vault/tokens.js';
import { eventually } from '../harness/eventually.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
  await n.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
  await n.call('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/data/app/*" { capabilities = ["read"] }' });
  await n.call('PUT', 'secret/data/app/db', { data: { password: 'db-pw' } });
}, 30_000);
afterAll(async () => n.stop());

const store = () => n.node.core.store();
/** The entries of one class's auth table: one key per mount, `core/auth/<uuid>` or `local/core/auth/<uuid>`. */
const authTable = async (key: string): Promise<Array<{ path: string; uuid: string }>> => {
  const out: Array<{ path: string; uuid: string }> = [];
  for (const uuid of await store().list(key + '/')) out.push(JSON.parse((await store().get(`${key}/${uuid}`))!.toString('utf8')));
  expect(await store().get(key)).toBeUndefined();
  return out;
};

describe('sys/auth', () => {
  it('enables, lists (with the built-in token/), reads and disables; bad input changes nothing', async () => {
    expect((await n.call('POST', 'sys/auth/people', { type: 'userpass', description: 'humans' })).status).toBe(204);
    const list = await n.call('GET', 'sys/auth');
    expect(list.status).toBe(200);
    expect(list.body.data['token/']).toMatchObject({ type: 'token', description: 'token based credentials', local: false });
    expect(list.body.data['token/'].accessor).toMatch(/^auth_token_/);
    const people = list.body.data['people/'];
    expect(people).toMatchObject({ type: 'userpass', description: 'humans', local: false, seal_wrap: false, options: null });
    expect(people.accessor).toMatch(/^auth_userpass_[0-9a-f]{8}$/);
    expect(people.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(people.config).toMatchObject({ default_lease_ttl: 0, max_lease_ttl: 0 });
    expect((await n.call('GET', 'sys/auth/people')).body.data.accessor).toBe(people.accessor);

    const before = (await n.call('GET', 'sys/auth')).body.data;
    for (const [path, body] of [
      ['people', { type: 'approle' }],
      ['people/nested', { type: 'userpass' }],
      ['token', { type: 'userpass' }],
      ['other', { type: 'ldap' }],
      ['other', {}],
      ['other', { type: 'userpass', config: { default_lease_ttl: '2h', max_lease_ttl: '1h' } }],
    ] as const) {
      const r = await n.call('POST', `sys/auth/${path}`, body);
      expect({ path, status: r.status, errors: Array.isArray(r.body?.errors) }).toEqual({ path, status: 400, errors: true });
    }
    expect((await n.call('GET', 'sys/auth')).body.data).toEqual(before);

    // Needs sudo on sys/auth/<path>, as Vault's root-protected sys/auth/*.
    await n.call('PUT', 'sys/policies/acl/auth-admin', { policy: 'path "sys/auth/*" { capabilities = ["create", "update", "delete", "read"] }' });
    const admin = (await n.call('POST', 'auth/token/create', { policies: ['auth-admin'] })).body.auth.client_token;
    expect((await n.call('POST', 'sys/auth/nosudo', { type: 'userpass' }, { token: admin })).status).toBe(403);
    expect((await n.call('GET', 'sys/auth')).body.data['nosudo/']).toBeUndefined();

    expect((await n.call('DELETE', 'sys/auth/people')).status).toBe(204);
    expect((await n.call('GET', 'sys/auth')).body.data['people/']).toBeUndefined();
    expect((await n.call('LIST', 'auth/people/users')).status).toBe(404);
  });

  it('keeps a method in the replicated table and its data under auth/<uuid>/ unless local: true', async () => {
    await n.call('POST', 'sys/auth/shared-up', { type: 'userpass' });
    await n.call('POST', 'sys/auth/site-up', { type: 'userpass', local: true });
    expect((await n.call('GET', 'sys/auth')).body.data['site-up/'].local).toBe(true);
    const shared = (await authTable('core/auth')).find((e) => e.path === 'shared-up/');
    const site = (await authTable('local/core/auth')).find((e) => e.path === 'site-up/');
    expect(shared).toBeDefined();
    expect(site).toBeDefined();
    expect((await authTable('core/auth')).some((e) => e.path === 'site-up/')).toBe(false);
    await n.call('POST', 'auth/shared-up/users/u1', { password: 'pw-one' });
    await n.call('POST', 'auth/site-up/users/u1', { password: 'pw-one' });
    expect(await store().get(`auth/${shared!.uuid}/user/u1`)).toBeDefined();
    expect(await store().get(`local/auth/${site!.uuid}/user/u1`)).toBeDefined();
    // The stored record holds a scrypt hash, never the password.
    const raw = (await store().get(`auth/${shared!.uuid}/user/u1`))!.toString('utf8');
    expect(raw).not.toContain('pw-one');
    expect(JSON.parse(raw).password_hash).toMatch(/^scrypt\$/);
    // A login's token is local class: it would be created where the login happens.
    const login = await n.call('POST', 'auth/shared-up/login/u1', { password: 'pw-one' }, { token: null });
    expect(login.status).toBe(200);
    expect(await store().list(`local/auth-tokens/${shared!.uuid}/`)).toHaveLength(1);
  });
});

describe('userpass', () => {
  beforeAll(async () => {
    await n.call('POST', 'sys/auth/userpass', { type: 'userpass' });
  });

  it('creates, reads (never the password), lists and deletes users; logs in with Vault\'s auth block', async () => {
    const w = await n.call('POST', 'auth/userpass/users/Bob', { password: 'hunter2-secret', token_policies: 'reader', token_ttl: '1h', token_max_ttl: '2h' });
    expect(w.status).toBe(204);
    const read = await n.call('GET', 'auth/userpass/users/bob');
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ token_policies: ['reader'], policies: ['reader'], token_ttl: 3600, token_max_ttl: 7200, token_num_uses: 0 });
    expect(read.text).not.toContain('hunter2');
    expect(read.text).not.toContain('password');
    expect((await n.call('LIST', 'auth/userpass/users')).body.data.keys).toEqual(['bob']);

    const login = await n.call('POST', 'auth/userpass/login/BOB', { password: 'hunter2-secret' }, { token: null });
    expect(login.status).toBe(200);
    expect(login.text).not.toContain('hunter2');
    const auth = login.body.auth;
    expect(auth).toMatchObject({
      policies: ['default', 'reader'], token_policies: ['default', 'reader'], metadata: { username: 'bob' },
      lease_duration: 3600, renewable: true, entity_id: '', token_type: 'service', orphan: true,
    });
    expect(auth.client_token).toMatch(/^hvs\./);

    // The token works with its policies, and only them.
    const got = await n.call('GET', 'secret/data/app/db', undefined, { token: auth.client_token });
    expect(got.status).toBe(200);
    expect(got.body.data.data).toEqual({ password: 'db-pw' });
    expect((await n.call('PUT', 'secret/data/app/db', { data: { x: '1' } }, { token: auth.client_token })).status).toBe(403);
    const self = await n.call('GET', 'auth/token/lookup-self', undefined, { token: auth.client_token });
    expect(self.body.data).toMatchObject({ path: 'auth/userpass/login/bob', display_name: 'userpass-bob', meta: { username: 'bob' } });

    expect((await n.call('DELETE', 'auth/userpass/users/bob')).status).toBe(204);
    expect((await n.call('GET', 'auth/userpass/users/bob')).status).toBe(404);
    expect((await n.call('POST', 'auth/userpass/login/bob', { password: 'hunter2-secret' }, { token: null })).status).toBe(400);
  });

  it('refuses a wrong password and an unknown user with the same 400, and issues nothing', async () => {
    await n.call('POST', 'auth/userpass/users/carol', { password: 'right-pw' });
    const entry = (await authTable('core/auth')).find((e) => e.path === 'userpass/')!;
    const issued = async () => (await store().list(`local/auth-tokens/${entry.uuid}/`)).length;
    const before = await issued();
    const wrong = await n.call('POST', 'auth/userpass/login/carol', { password: 'wrong-pw' }, { token: null });
    const unknown = await n.call('POST', 'auth/userpass/login/nobody', { password: 'wrong-pw' }, { token: null });
    const empty = await n.call('POST', 'auth/userpass/login/carol', {}, { token: null });
    for (const r of [wrong, unknown, empty]) {
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ errors: ['invalid username or password'] });
    }
    expect(wrong.text).not.toContain('wrong-pw');
    expect(await issued()).toBe(before);
  });

  it('changes a password; user management needs a token, login does not', async () => {
    await n.call('POST', 'auth/userpass/users/dave', { password: 'old-pw' });
    expect((await n.call('POST', 'auth/userpass/users/dave/password', { password: 'new-pw' })).status).toBe(204);
    expect((await n.call('POST', 'auth/userpass/login/dave', { password: 'old-pw' }, { token: null })).status).toBe(400);
    expect((await n.call('POST', 'auth/userpass/login/dave', { password: 'new-pw' }, { token: null })).status).toBe(200);
    // An update without password keeps it.
    expect((await n.call('POST', 'auth/userpass/users/dave', { token_policies: ['reader'] })).status).toBe(204);
    const again = await n.call('POST', 'auth/userpass/login/dave', { password: 'new-pw' }, { token: null });
    expect(again.body.auth.policies).toEqual(['default', 'reader']);

    expect((await n.call('POST', 'auth/userpass/users/eve', { password: 'x' }, { token: null })).status).toBe(403);
    expect((await n.call('LIST', 'auth/userpass/users', undefined, { token: null })).status).toBe(403);
    expect((await n.call('POST', 'auth/userpass/users/eve', {})).status).toBe(400); // no password
    expect((await n.call('POST', 'auth/userpass/users/bad name', { password: 'x' })).status).toBe(400);
    expect((await n.call('GET', 'auth/userpass/users/eve')).status).toBe(404);
  });

  it('caps the login TTL by the mount max, and disabling the mount revokes its tokens and removes its users', async () => {
    await n.call('POST', 'sys/auth/short', { type: 'userpass', config: { max_lease_ttl: '30m' } });
    await n.call('POST', 'auth/short/users/frank', { password: 'pw', token_ttl: '1h' });
    const login = await n.call('POST', 'auth/short/login/frank', { password: 'pw' }, { token: null });
    expect(login.body.auth.lease_duration).toBe(1800);
    expect(login.body.warnings?.[0]).toMatch(/exceeded the effective max_ttl/);
    const token = login.body.auth.client_token;
    expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token })).status).toBe(200);
    const uuid = (await authTable('core/auth')).find((e) => e.path === 'short/')!.uuid;

    expect((await n.call('DELETE', 'sys/auth/short')).status).toBe(204);
    expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token })).status).toBe(403);
    expect(await store().list(`auth/${uuid}/`)).toEqual([]);
    expect(await store().list(`local/auth-tokens/${uuid}/`)).toEqual([]);
    // Enabled again at the same path, the old user is gone.
    await n.call('POST', 'sys/auth/short', { type: 'userpass' });
    expect((await n.call('POST', 'auth/short/login/frank', { password: 'pw' }, { token: null })).status).toBe(400);
  });
});

describe('approle', () => {
  beforeAll(async () => {
    await n.call('POST', 'sys/auth/approle', { type: 'approle' });
  });

  const roleId = async (role: string): Promise<string> => (await n.call('GET', `auth/approle/role/${role}/role-id`)).body.data.role_id;
  const secretId = async (role: string, body: Record<string, unknown> = {}) => (await n.call('POST', `auth/approle/role/${role}/secret-id`, body)).body.data;
  const login = (role_id: string, secret_id: string) => n.call('POST', 'auth/approle/login', { role_id, secret_id }, { token: null });

  it('creates, reads, lists and deletes roles; role-id read and set; login issues a working token', async () => {
    const w = await n.call('POST', 'auth/approle/role/web', { token_policies: ['reader'], token_ttl: '20m', secret_id_ttl: '10m' });
    expect(w.status).toBe(204);
    const role = await n.call('GET', 'auth/approle/role/web');
    expect(role.body.data).toMatchObject({ token_policies: ['reader'], token_ttl: 1200, secret_id_ttl: 600, secret_id_num_uses: 0, bind_secret_id: true });
    expect((await n.call('LIST', 'auth/approle/role')).body.data.keys).toEqual(['web']);
    const rid = await roleId('web');
    expect(rid).toMatch(/^[0-9a-f-]{36}$/);

    const sid = await secretId('web', { metadata: { team: 'blue' } });
    expect(sid).toMatchObject({ secret_id_ttl: 600, secret_id_num_uses: 0 });
    expect(sid.secret_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(sid.secret_id_accessor).toMatch(/^[0-9a-f-]{36}$/);
    expect((await n.call('LIST', 'auth/approle/role/web/secret-id')).body.data.keys).toEqual([sid.secret_id_accessor]);

    const ok = await login(rid, sid.secret_id);
    expect(ok.status).toBe(200);
    expect(ok.body.auth).toMatchObject({ policies: ['default', 'reader'], metadata: { role_name: 'web', team: 'blue' }, lease_duration: 1200, token_type: 'service', orphan: true });
    expect((await n.call('GET', 'secret/data/app/db', undefined, { token: ok.body.auth.client_token })).status).toBe(200);

    // Custom role-id; another role cannot take it.
    expect((await n.call('POST', 'auth/approle/role/web/role-id', { role_id: 'web-custom-id' })).status).toBe(204);
    expect(await roleId('web')).toBe('web-custom-id');
    expect((await login(rid, sid.secret_id)).status).toBe(400);
    expect((await login('web-custom-id', sid.secret_id)).status).toBe(200);
    await n.call('POST', 'auth/approle/role/api', {});
    expect((await n.call('POST', 'auth/approle/role/api/role-id', { role_id: 'web-custom-id' })).status).toBe(400);

    // No secret is ever stored in the clear.
    const uuid = (await authTable('core/auth')).find((e) => e.path === 'approle/')!.uuid;
    const stored = await store().list(`auth/${uuid}/secret-id/web/`);
    expect(stored).toHaveLength(1);
    expect(stored[0]).not.toContain(sid.secret_id);

    expect((await n.call('DELETE', 'auth/approle/role/web')).status).toBe(204);
    expect((await n.call('GET', 'auth/approle/role/web')).status).toBe(404);
    expect((await login('web-custom-id', sid.secret_id)).body).toEqual({ errors: ['invalid role or secret ID'] });
    expect(await store().list(`auth/${uuid}/secret-id/web/`)).toEqual([]);
  });

  it('enforces secret ID num_uses; a refused login spends nothing', async () => {
    await n.call('POST', 'auth/approle/role/batch', { token_policies: ['reader'] });
    const rid = await roleId('batch');
    const once = await secretId('batch', { num_uses: 1 });
    expect(once.secret_id_num_uses).toBe(1);
    expect((await login(rid, once.secret_id)).status).toBe(200);
    const second = await login(rid, once.secret_id);
    expect(second.status).toBe(400);
    expect(second.body).toEqual({ errors: ['invalid role or secret ID'] });

    const twice = await secretId('batch', { num_uses: 2 });
    expect((await login(rid, 'not-the-secret')).status).toBe(400);
    expect((await login('not-the-role', twice.secret_id)).status).toBe(400);
    expect((await login(rid, twice.secret_id)).status).toBe(200);
    expect((await login(rid, twice.secret_id)).status).toBe(200);
    expect((await login(rid, twice.secret_id)).status).toBe(400);

    // Concurrent logins never overspend a last use.
    const last = await secretId('batch', { num_uses: 1 });
    const results = await Promise.all([1, 2, 3, 4].map(() => login(rid, last.secret_id)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400, 400]);

    expect((await n.call('POST', 'auth/approle/login', {}, { token: null })).status).toBe(400);
  });

  it('expires a secret ID after its ttl and refuses one wider than the role allows', async () => {
    await n.call('POST', 'auth/approle/role/brief', { secret_id_ttl: '1h', secret_id_num_uses: 5 });
    expect((await n.call('POST', 'auth/approle/role/brief/secret-id', { ttl: '2h' })).status).toBe(400);
    expect((await n.call('POST', 'auth/approle/role/brief/secret-id', { num_uses: 6 })).status).toBe(400);
    expect((await n.call('POST', 'auth/approle/role/brief/secret-id', { num_uses: 0 })).status).toBe(400);
    expect((await n.call('POST', 'auth/approle/role/nope/secret-id', {})).status).toBe(404);
    expect((await n.call('POST', 'auth/approle/role/unbound', { bind_secret_id: false })).status).toBe(400);
    expect((await n.call('GET', 'auth/approle/role/unbound')).status).toBe(404);

    const rid = await roleId('brief');
    const sid = await secretId('brief', { ttl: '1s' });
    expect(sid.secret_id_ttl).toBe(1);
    await eventually(async () => expect((await login(rid, sid.secret_id)).status).toBe(400), { timeoutMs: 5_000 });
    const fresh = await secretId('brief');
    expect((await login(rid, fresh.secret_id)).status).toBe(200);
  });
});

describe('namespaces', () => {
  it('gives a namespace its own auth mounts; a login there issues a token of that namespace', async () => {
    expect((await n.call('POST', 'sys/namespaces/team')).status).toBe(200);
    const ns = { headers: { 'X-Vault-Namespace': 'team' } };
    expect((await n.call('POST', 'sys/auth/nsup', { type: 'userpass' }, ns)).status).toBe(204);
    expect((await n.call('GET', 'sys/auth', undefined, ns)).body.data['nsup/']).toMatchObject({ type: 'userpass' });
    expect((await n.call('GET', 'sys/auth')).body.data['nsup/']).toBeUndefined();
    expect((await n.call('LIST', 'auth/nsup/users')).status).toBe(404);

    await n.call('PUT', 'team/sys/policies/acl/ns-reader', { policy: 'path "sys/auth" { capabilities = ["read"] }' });
    expect((await n.call('POST', 'team/auth/nsup/users/alice', { password: 'alice-pw', token_policies: 'ns-reader' })).status).toBe(204);
    const login = await n.call('POST', 'team/auth/nsup/login/alice', { password: 'alice-pw' }, { token: null });
    expect(login.status).toBe(200);
    const token = login.body.auth.client_token;
    const entry = await store().get(`local/token/id/${hashToken(token)}`);
    expect(JSON.parse(entry!.toString('utf8')).namespace_path).toBe('team/');
    expect((await n.call('GET', 'sys/auth', undefined, { token, ...ns })).status).toBe(200);
    expect((await n.call('GET', 'sys/auth', undefined, { token })).status).toBe(403);
  });

  it('refuses to delete a namespace that still has auth methods, so a recreated one never inherits old users', async () => {
    expect((await n.call('POST', 'sys/namespaces/gone')).status).toBe(200);
    const ns = { headers: { 'X-Vault-Namespace': 'gone' } };
    await n.call('POST', 'sys/auth/up', { type: 'userpass' }, ns);
    await n.call('POST', 'gone/auth/up/users/old', { password: 'old-pw' });
    const refused = await n.call('DELETE', 'sys/namespaces/gone');
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatch(/auth methods/);
    expect((await n.call('GET', 'sys/namespaces/gone')).status).toBe(200);
    expect((await n.call('DELETE', 'sys/auth/up', undefined, ns)).status).toBe(204);
    expect((await n.call('DELETE', 'sys/namespaces/gone')).status).toBe(204);
  });
});
