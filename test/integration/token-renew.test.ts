/**
 * Issue 27, item 1: token renewal as Vault's token store answers it (vault/token_store.go
 * handleRenew*, expiration.go RenewToken, framework.CalculateTTL): renew, renew-self and
 * renew-accessor; the increment bounded by the explicit max TTL counted from creation; periodic
 * tokens; Vault's refusals (unknown, batch, non-renewable, root), each changing nothing; a token
 * of another namespace answered as an unknown one; lookup of an unknown token a 403.
 */
import { eventually } from '../harness/index.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
  await n.call('POST', 'sys/namespaces/team', {});
}, 30_000);
afterAll(async () => n.stop());

const make = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const r = await n.call('POST', 'auth/token/create', body, { headers });
  expect(r.status).toBe(200);
  return r.body.auth as { client_token: string; accessor: string; lease_duration: number };
};
const ttlOf = async (token: string): Promise<number> => (await n.call('POST', 'auth/token/lookup', { token })).body.data.ttl;

describe('renew', () => {
  it('renew-self extends by the increment, answered with Vault\'s auth block', async () => {
    const t = await make({ ttl: '60s', explicit_max_ttl: '1h', policies: ['default'] });
    const r = await n.call('POST', 'auth/token/renew-self', { increment: '10m' }, { token: t.client_token });
    expect(r.status).toBe(200);
    expect(r.body.auth).toMatchObject({ client_token: t.client_token, accessor: t.accessor, lease_duration: 600, renewable: true, token_type: 'service' });
    expect(await ttlOf(t.client_token)).toBeGreaterThan(590);
    const looked = (await n.call('POST', 'auth/token/lookup', { token: t.client_token })).body.data;
    expect(looked.creation_ttl).toBe(60);
    expect(typeof looked.last_renewal_time).toBe('number');
  });

  it('without an increment the creation TTL is granted again; the explicit max TTL caps it with Vault\'s warning', async () => {
    const t = await make({ ttl: '100s', explicit_max_ttl: '120s' });
    const plain = await n.call('POST', 'auth/token/renew', { token: t.client_token });
    expect(plain.status).toBe(200);
    expect(plain.body.auth.lease_duration).toBe(100);
    const capped = await n.call('POST', 'auth/token/renew', { token: t.client_token, increment: 3600 });
    expect(capped.status).toBe(200);
    expect(capped.body.auth.lease_duration).toBeLessThanOrEqual(120);
    expect(capped.body.auth.lease_duration).toBeGreaterThan(110);
    expect(capped.body.warnings).toEqual([expect.stringContaining('exceeded the effective max_ttl')]);
  });

  it('renew-accessor renews without giving the token back', async () => {
    const t = await make({ ttl: '60s' });
    const r = await n.call('POST', 'auth/token/renew-accessor', { accessor: t.accessor, increment: '5m' });
    expect(r.status).toBe(200);
    expect(r.body.auth.client_token).toBe('');
    expect(r.body.auth.lease_duration).toBe(300);
    expect(JSON.stringify(r.body)).not.toContain(t.client_token);
  });

  it('a periodic token gets its period at every renewal, whatever the increment, past the system max when no explicit max', async () => {
    const t = await make({ period: '30m', ttl: '1m' });
    expect(t.lease_duration).toBe(1800);
    const r = await n.call('POST', 'auth/token/renew', { token: t.client_token, increment: '5h' });
    expect(r.status).toBe(200);
    expect(r.body.auth.lease_duration).toBe(1800);
    expect((await n.call('POST', 'auth/token/lookup', { token: t.client_token })).body.data.period).toBe(1800);
  });

  it('a periodic token needs root or sudo', async () => {
    expect((await n.call('PUT', 'sys/policy/maker', { policy: 'path "auth/token/create" { capabilities = ["update"] }' })).status).toBe(204);
    const maker = await make({ policies: ['maker'] });
    const r = await n.call('POST', 'auth/token/create', { period: '1h', policies: ['maker'] }, { token: maker.client_token });
    expect(r).toMatchObject({ status: 400, body: { errors: ['root or sudo privileges required to create periodic token'] } });
  });

  it('refuses with Vault\'s 400s and changes nothing: unknown, non-renewable, root, batch, missing token', async () => {
    const fixed = await make({ ttl: '60s', renewable: false });
    const before = await ttlOf(fixed.client_token);
    expect(await n.call('POST', 'auth/token/renew', { token: fixed.client_token, increment: '1h' })).toMatchObject({ status: 400, body: { errors: ['lease is not renewable'] } });
    expect(await ttlOf(fixed.client_token)).toBeLessThanOrEqual(before);
    expect(await n.call('POST', 'auth/token/renew', { token: 'hvs.nosuchtoken' })).toMatchObject({ status: 400, body: { errors: ['token not found'] } });
    expect(await n.call('POST', 'auth/token/renew-accessor', { accessor: 'nosuch' })).toMatchObject({ status: 400, body: { errors: ['token not found'] } });
    expect(await n.call('POST', 'auth/token/renew-self', {})).toMatchObject({ status: 400, body: { errors: ['lease is not renewable'] } });
    const batch = await make({ type: 'batch', ttl: '60s', policies: ['default'] });
    expect(await n.call('POST', 'auth/token/renew', { token: batch.client_token })).toMatchObject({ status: 400, body: { errors: ['batch tokens cannot be renewed'] } });
    expect(await n.call('POST', 'auth/token/renew', {})).toMatchObject({ status: 400, body: { errors: ['missing token ID'] } });
    expect((await n.call('POST', 'auth/token/renew', { token: fixed.client_token, increment: 'soon' })).status).toBe(400);
  });

  it('a token of another namespace is renewed from nowhere else: answered as an unknown one', async () => {
    const root = await make({ ttl: '60s' });
    const inTeam = await n.call('POST', 'auth/token/renew', { token: root.client_token, increment: '1h' }, { headers: { 'x-vault-namespace': 'team' } });
    expect(inTeam).toMatchObject({ status: 400, body: { errors: ['token not found'] } });
    const byAccessor = await n.call('POST', 'auth/token/renew-accessor', { accessor: root.accessor }, { headers: { 'x-vault-namespace': 'team' } });
    expect(byAccessor).toMatchObject({ status: 400, body: { errors: ['token not found'] } });
    expect(await ttlOf(root.client_token)).toBeLessThanOrEqual(60);
  });

  it('keeps a token alive past its first TTL and refuses it past its explicit max TTL', async () => {
    const t = await make({ ttl: '2s', explicit_max_ttl: '5s' });
    const created = Date.now();
    // Renewed every 0.5 s, it outlives its 2 s TTL...
    while (Date.now() - created < 3_000) {
      expect((await n.call('POST', 'auth/token/renew-self', {}, { token: t.client_token })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 500));
    }
    expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: t.client_token })).status).toBe(200);
    // ...but not its 5 s explicit max: then every use and every renewal is refused.
    await eventually(async () => expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: t.client_token })).status).toBe(403), { timeoutMs: 8_000, intervalMs: 250 });
    expect((await n.call('POST', 'auth/token/renew', { token: t.client_token })).status).toBe(400);
  });
});

describe('lookup', () => {
  it('of an unknown or revoked token answers 403 "bad token", as Vault', async () => {
    const t = await make({});
    expect((await n.call('POST', 'auth/token/revoke', { token: t.client_token })).status).toBe(204);
    expect(await n.call('POST', 'auth/token/lookup', { token: t.client_token })).toMatchObject({ status: 403, body: { errors: ['bad token'] } });
    expect(await n.call('POST', 'auth/token/lookup', { token: 'hvs.unknown' })).toMatchObject({ status: 403, body: { errors: ['bad token'] } });
  });
});

describe('token roles', () => {
  it('stores a role with Vault\'s fields, lists it, reads it back, updates only what is given, deletes it', async () => {
    expect((await n.call('POST', 'auth/token/roles/web', { allowed_policies: 'web,ops', orphan: true, token_period: '1h', path_suffix: 'v1', token_type: 'service' })).status).toBe(204);
    const read = await n.call('GET', 'auth/token/roles/web');
    expect(read.body.data).toMatchObject({ name: 'web', allowed_policies: ['ops', 'web'], orphan: true, renewable: true, token_period: 3600, period: 3600, path_suffix: 'v1', token_type: 'service' });
    expect((await n.call('POST', 'auth/token/roles/web', { renewable: false })).status).toBe(204);
    expect((await n.call('GET', 'auth/token/roles/web')).body.data).toMatchObject({ allowed_policies: ['ops', 'web'], renewable: false, token_period: 3600 });
    expect((await n.call('LIST', 'auth/token/roles')).body.data.keys).toContain('web');
    expect((await n.call('DELETE', 'auth/token/roles/web')).status).toBe(204);
    expect((await n.call('GET', 'auth/token/roles/web')).status).toBe(404);
  });

  it('create/:role applies the role: allowed policies, orphan, period, path suffix, renewable', async () => {
    await n.call('POST', 'auth/token/roles/app', { allowed_policies: ['app'], orphan: true, period: '45m', path_suffix: 'blue' });
    const made = await n.call('POST', 'auth/token/create/app', {});
    expect(made.status).toBe(200);
    expect(made.body.auth).toMatchObject({ policies: ['app', 'default'], orphan: true, lease_duration: 2700, renewable: true });
    const looked = (await n.call('POST', 'auth/token/lookup', { token: made.body.auth.client_token })).body.data;
    expect(looked).toMatchObject({ path: 'auth/token/create/app/blue', period: 2700, orphan: true });
    // A periodic token of the role renews to its period whatever the increment.
    expect((await n.call('POST', 'auth/token/renew', { token: made.body.auth.client_token, increment: '9h' })).body.auth.lease_duration).toBe(2700);
  });

  it('refuses policies outside the role, disallowed ones, an unknown role and bad fields, creating nothing', async () => {
    await n.call('POST', 'auth/token/roles/narrow', { allowed_policies: ['app'] });
    await n.call('POST', 'auth/token/roles/deny', { disallowed_policies: ['secret'] });
    const outside = await n.call('POST', 'auth/token/create/narrow', { policies: ['ops'] });
    expect(outside.status).toBe(400);
    expect(outside.body.errors[0]).toContain("must be subset of the role's allowed policies");
    const denied = await n.call('POST', 'auth/token/create/deny', { policies: ['secret'] });
    expect(denied.status).toBe(400);
    expect(denied.body.errors[0]).toContain('contains disallowed policies');
    expect(await n.call('POST', 'auth/token/create/nosuch', {})).toMatchObject({ status: 400, body: { errors: ['unknown role nosuch'] } });
    expect((await n.call('POST', 'auth/token/roles/bad', { token_type: 'sometimes' })).status).toBe(400);
    expect((await n.call('POST', 'auth/token/roles/bad', { path_suffix: '../up' })).status).toBe(400);
    expect((await n.call('GET', 'auth/token/roles/bad')).status).toBe(404);
  });

  it('a role made non-renewable makes non-renewable tokens; a batch role makes batch tokens', async () => {
    await n.call('POST', 'auth/token/roles/fixed', { allowed_policies: ['app'], renewable: false });
    const fixed = (await n.call('POST', 'auth/token/create/fixed', { ttl: '10m' })).body.auth;
    expect(fixed.renewable).toBe(false);
    expect(await n.call('POST', 'auth/token/renew', { token: fixed.client_token })).toMatchObject({ status: 400, body: { errors: ['lease is not renewable'] } });
    await n.call('POST', 'auth/token/roles/batchy', { allowed_policies: ['app'], token_type: 'batch' });
    const batch = (await n.call('POST', 'auth/token/create/batchy', { ttl: '10m' })).body.auth;
    expect(batch).toMatchObject({ token_type: 'batch', renewable: false });
  });

  it('roles are per namespace', async () => {
    await n.call('POST', 'auth/token/roles/rootonly', { allowed_policies: ['app'] });
    const inTeam = await n.call('GET', 'auth/token/roles/rootonly', undefined, { headers: { 'x-vault-namespace': 'team' } });
    expect(inTeam.status).toBe(404);
    expect((await n.call('POST', 'auth/token/create/rootonly', {}, { headers: { 'x-vault-namespace': 'team' } })).status).toBe(400);
  });
});
