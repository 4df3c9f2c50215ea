/**
 * Issue 27, answers 3, 5, 7 and 8, as Vault gives them: the `list` query flag parsed as a Go
 * bool (http/logical.go, strconv.ParseBool); `sys/policy`, `sys/mounts` and `sys/auth` repeating
 * their data at the top level of the body (http/handler.go injectDataIntoTopRoutes); mount type
 * `generic` served as KV v1 and shown as `generic` (vault/mount.go mountAliases); `DELETE
 * sys/policy/<name>` of a name no policy can have answering 204 (root and default keep their 400).
 */
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
  await n.call('POST', 'sys/mounts/old', { type: 'kv', options: { version: '1' } });
  await n.call('POST', 'old/a', { v: '1' });
  await n.call('POST', 'old/b', { v: '2' });
}, 30_000);
afterAll(async () => n.stop());

describe('the list query flag', () => {
  it.each(['1', 't', 'T', 'TRUE', 'true', 'True'])('list=%s lists', async (flag) => {
    const r = await n.call('GET', `old?list=${flag}`);
    expect(r.status).toBe(200);
    expect(r.body.data.keys).toEqual(['a', 'b']);
  });

  it.each(['0', 'f', 'F', 'FALSE', 'false', 'False'])('list=%s reads', async (flag) => {
    expect((await n.call('GET', `old/a?list=${flag}`)).body.data).toEqual({ v: '1' });
  });

  it('a value Go does not take as a bool is a 400 that reads nothing', async () => {
    const r = await n.call('GET', 'old/a?list=yes');
    expect(r.status).toBe(400);
    expect(r.body.data).toBeUndefined();
  });
});

describe('data repeated at the top level', () => {
  it('sys/policy, sys/policy/<name>, sys/mounts, sys/mounts/<path>/tune, sys/auth and sys/auth/<path>', async () => {
    const policies = (await n.call('GET', 'sys/policy')).body;
    expect(policies.keys).toEqual(policies.data.keys);
    expect(policies.policies).toEqual(policies.data.policies);
    expect(policies.request_id).toEqual(expect.any(String));
    expect((await n.call('GET', 'sys/policy/default')).body).toMatchObject({ name: 'default', rules: expect.any(String) });
    const mounts = (await n.call('GET', 'sys/mounts')).body;
    expect(mounts['old/']).toEqual(mounts.data['old/']);
    expect(mounts['sys/']).toMatchObject({ type: 'system' });
    expect((await n.call('GET', 'sys/mounts/old/tune')).body).toMatchObject({ max_lease_ttl: expect.any(Number), data: expect.any(Object) });
    await n.call('POST', 'sys/auth/up', { type: 'userpass' });
    const auth = (await n.call('GET', 'sys/auth')).body;
    expect(auth['up/']).toEqual(auth.data['up/']);
    expect((await n.call('GET', 'sys/auth/up')).body).toMatchObject({ type: 'userpass' });
  });

  it('not elsewhere: the newer sys/policies/acl and a secret keep the envelope alone', async () => {
    expect((await n.call('GET', 'sys/policies/acl')).body.keys).toBeUndefined();
    expect((await n.call('GET', 'old/a')).body.v).toBeUndefined();
  });
});

describe('mount type generic', () => {
  it('is KV v1, shown as generic', async () => {
    expect((await n.call('POST', 'sys/mounts/gen', { type: 'generic' })).status).toBe(204);
    expect((await n.call('GET', 'sys/mounts')).body.data['gen/']).toMatchObject({ type: 'generic', options: null });
    expect((await n.call('POST', 'gen/x', { v: 'g' })).status).toBe(204);
    expect((await n.call('GET', 'gen/x')).body.data).toEqual({ v: 'g' });
  });

  it('refuses a version, as Vault does', async () => {
    const r = await n.call('POST', 'sys/mounts/gen2', { type: 'generic', options: { version: '2' } });
    expect(r).toMatchObject({ status: 400, body: { errors: ['secrets engine "generic" does not allow setting a version'] } });
    expect((await n.call('GET', 'sys/mounts')).body.data['gen2/']).toBeUndefined();
  });
});

describe('DELETE sys/policy/<name>', () => {
  it('of a name no policy can have is a 204', async () => {
    expect((await n.call('DELETE', 'sys/policy/-nope')).status).toBe(204);
    expect((await n.call('DELETE', 'sys/policies/acl/a%20b')).status).toBe(204);
  });

  it('of root and default stays Vault\'s 400', async () => {
    expect(await n.call('DELETE', 'sys/policy/root')).toMatchObject({ status: 400, body: { errors: ['cannot delete "root" policy'] } });
    expect(await n.call('DELETE', 'sys/policy/default')).toMatchObject({ status: 400, body: { errors: ['cannot delete default policy'] } });
  });
});

describe('tune', () => {
  const DAY32 = 768 * 3600;
  it('of an untuned mount shows the system default TTLs', async () => {
    const r = await n.call('GET', 'sys/mounts/old/tune');
    expect(r.body.data).toEqual({ description: '', default_lease_ttl: DAY32, max_lease_ttl: DAY32, force_no_cache: false, options: { version: '1' } });
    await n.call('POST', 'sys/mounts/old/tune', { max_lease_ttl: '1h' });
    expect((await n.call('GET', 'sys/mounts/old/tune')).body.data).toMatchObject({ default_lease_ttl: 3600, max_lease_ttl: 3600 });
    expect((await n.call('GET', 'sys/mounts/old')).body.data.config).toMatchObject({ default_lease_ttl: 0, max_lease_ttl: 3600 });
    expect(await n.call('GET', 'sys/mounts/none/tune')).toMatchObject({ status: 400, body: { errors: ['cannot fetch sysview for path "none/"'] } });
  });

  it('sys/auth/<path>/tune reads and writes the auth method, never enables one at <path>/tune', async () => {
    await n.call('POST', 'sys/auth/tuned', { type: 'userpass' });
    expect((await n.call('GET', 'sys/auth/tuned/tune')).body.data).toEqual({ description: '', default_lease_ttl: DAY32, max_lease_ttl: DAY32, force_no_cache: false, token_type: 'default-service' });
    const w = await n.call('POST', 'sys/auth/tuned/tune', { description: 'people', default_lease_ttl: '10m', max_lease_ttl: '2h' });
    expect(w.status).toBe(204);
    expect((await n.call('GET', 'sys/auth/tuned/tune')).body.data).toMatchObject({ description: 'people', default_lease_ttl: 600, max_lease_ttl: 7200 });
    const listed = (await n.call('GET', 'sys/auth')).body.data;
    expect(listed['tuned/']).toMatchObject({ description: 'people', config: { default_lease_ttl: 600, max_lease_ttl: 7200 } });
    expect(listed['tuned/tune/']).toBeUndefined();
    // The tuned TTL bounds the tokens the method issues.
    await n.call('POST', 'auth/tuned/users/bob', { password: 'pw' });
    expect((await n.call('POST', 'auth/tuned/login/bob', { password: 'pw' }, { token: null })).body.auth.lease_duration).toBe(600);
  });

  it('sys/auth/<path>/tune refuses what it cannot do, changing nothing', async () => {
    expect(await n.call('POST', 'sys/auth/nothing/tune', { description: 'x' })).toMatchObject({ status: 400, body: { errors: ['tune of path "auth/nothing/" failed: no mount entry found'] } });
    expect((await n.call('GET', 'sys/auth')).body.data['nothing/tune/']).toBeUndefined();
    expect(await n.call('GET', 'sys/auth/nothing/tune')).toMatchObject({ status: 400 });
    expect((await n.call('POST', 'sys/auth/tuned/tune', { default_lease_ttl: '3h' })).status).toBe(400);
    expect((await n.call('GET', 'sys/auth/tuned/tune')).body.data.default_lease_ttl).toBe(600);
    expect((await n.call('GET', 'sys/auth/token/tune')).body.data).toMatchObject({ default_lease_ttl: DAY32, max_lease_ttl: DAY32 });
  });
});
