/**
 * Issue 27: AppRole's secret ID endpoints as Vault answers them (builtin/credential/approle
 * path_role.go): custom-secret-id, secret-id/lookup, secret-id-accessor/lookup, secret-id/destroy
 * and secret-id-accessor/destroy (POST, and DELETE with the field in the query). A lookup never
 * shows the secret ID; refusals change nothing; namespaces are boundaries.
 */
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
  await n.call('POST', 'sys/auth/approle', { type: 'approle' });
  await n.call('POST', 'auth/approle/role/web', { token_policies: ['default'], secret_id_ttl: '1h', secret_id_num_uses: 3 });
  await n.call('POST', 'auth/approle/role/api', {});
}, 30_000);
afterAll(async () => n.stop());

const base = 'auth/approle/role';
const roleId = async (role: string, ns?: Record<string, string>): Promise<string> =>
  (await n.call('GET', `${base}/${role}/role-id`, undefined, ns ? { headers: ns } : {})).body.data.role_id;
const login = (role_id: string, secret_id: string, ns?: Record<string, string>) =>
  n.call('POST', 'auth/approle/login', { role_id, secret_id }, { token: null, ...(ns ? { headers: ns } : {}) });
const accessors = async (role: string): Promise<string[]> => {
  const r = await n.call('LIST', `${base}/${role}/secret-id`);
  return r.status === 404 ? [] : [...r.body.data.keys].sort();
};
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe('custom-secret-id', () => {
  it('registers the caller\'s secret ID with Vault\'s answer; login takes it; a duplicate is refused and changes nothing', async () => {
    const made = await n.call('POST', `${base}/web/custom-secret-id`, { secret_id: 'my-own-secret', metadata: '{"team":"blue"}', num_uses: 2, ttl: '30m' });
    expect(made.status).toBe(200);
    expect(made.body.data).toEqual({ secret_id: 'my-own-secret', secret_id_accessor: expect.stringMatching(/^[0-9a-f-]{36}$/), secret_id_ttl: 1800, secret_id_num_uses: 2 });
    const before = await accessors('web');
    expect(before).toContain(made.body.data.secret_id_accessor);

    const again = await n.call('POST', `${base}/web/custom-secret-id`, { secret_id: 'my-own-secret', num_uses: 1 });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ errors: ['failed to store secret_id: SecretID is already registered'] });
    expect(await accessors('web')).toEqual(before);
    // The same secret ID on another role is another secret ID, as in Vault (stored per role).
    expect((await n.call('POST', `${base}/api/custom-secret-id`, { secret_id: 'my-own-secret' })).status).toBe(200);

    const rid = await roleId('web');
    const ok = await login(rid, 'my-own-secret');
    expect(ok.status).toBe(200);
    expect(ok.body.auth.metadata).toEqual({ role_name: 'web', team: 'blue' });
    const seen = await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: 'my-own-secret' });
    expect(seen.body.data.secret_id_num_uses).toBe(1);
  });

  it('refuses bad input with Vault\'s 4xx and creates nothing', async () => {
    const before = await accessors('web');
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{}, 400, 'missing secret_id'],
      [{ secret_id: '' }, 400, 'missing secret_id'],
      [{ secret_id: 'wide', ttl: '2h' }, 400, "ttl cannot be longer than the role's secret_id_ttl"],
      [{ secret_id: 'many', num_uses: 4 }, 400, "num_uses cannot be higher than the role's secret_id_num_uses"],
      [{ secret_id: 'unlimited', num_uses: 0 }, 400, "num_uses cannot be higher than the role's secret_id_num_uses"],
      [{ secret_id: 'negative', num_uses: -1 }, 400, 'num_uses cannot be negative'],
      [{ secret_id: 'bound', cidr_list: '10.0.0.0/8' }, 400, 'cidr_list is not supported: secret IDs cannot be bound to CIDR blocks'],
      [{ secret_id: 'bound', token_bound_cidrs: ['10.0.0.0/8'] }, 400, 'token_bound_cidrs is not supported: secret IDs cannot be bound to CIDR blocks'],
    ];
    for (const [body, status, text] of cases) {
      const r = await n.call('POST', `${base}/web/custom-secret-id`, body);
      expect([body, r.status, r.body.errors?.join(' ')]).toEqual([body, status, expect.stringContaining(text)]);
    }
    expect(await accessors('web')).toEqual(before);
    // Vault answers an unknown role 404 (ErrUnsupportedPath), for a generated secret ID too.
    for (const path of ['custom-secret-id', 'secret-id']) {
      const r = await n.call('POST', `${base}/nope/${path}`, { secret_id: 'x' });
      expect([path, r.status, r.body]).toEqual([path, 404, { errors: ['role "nope" does not exist'] }]);
    }
    // Empty CIDR lists (what clients send by default) and a null metadata are taken.
    const plain = await n.call('POST', `${base}/web/custom-secret-id`, { secret_id: 'plain', metadata: null, cidr_list: '', token_bound_cidrs: [] });
    expect(plain.status).toBe(200);
  });
});

describe('lookup', () => {
  it('answers Vault\'s properties by secret ID and by accessor, never the secret ID itself', async () => {
    const made = (await n.call('POST', `${base}/web/secret-id`, { metadata: { env: 'prod' }, ttl: 600, num_uses: 3 })).body.data;
    const bySecret = await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: made.secret_id });
    expect(bySecret.status).toBe(200);
    const view = bySecret.body.data;
    expect(Object.keys(view).sort()).toEqual(['cidr_list', 'creation_time', 'expiration_time', 'last_updated_time', 'metadata', 'secret_id_accessor', 'secret_id_num_uses', 'secret_id_ttl', 'token_bound_cidrs']);
    expect(view).toMatchObject({ cidr_list: [], token_bound_cidrs: [], metadata: { env: 'prod' }, secret_id_accessor: made.secret_id_accessor, secret_id_num_uses: 3, secret_id_ttl: 600 });
    for (const t of ['creation_time', 'expiration_time', 'last_updated_time']) expect(view[t]).toMatch(RFC3339);
    expect(Date.parse(view.expiration_time) - Date.parse(view.creation_time)).toBe(600_000);
    expect(JSON.stringify(bySecret.body)).not.toContain(made.secret_id);

    const byAccessor = await n.call('POST', `${base}/web/secret-id-accessor/lookup`, { secret_id_accessor: made.secret_id_accessor });
    expect(byAccessor.status).toBe(200);
    expect(byAccessor.body.data).toEqual(view);
    expect(JSON.stringify(byAccessor.body)).not.toContain(made.secret_id);

    // A spent use shows in the uses left.
    expect((await login(await roleId('web'), made.secret_id)).status).toBe(200);
    const after = (await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: made.secret_id })).body.data;
    expect(after.secret_id_num_uses).toBe(2);
    expect(Date.parse(after.last_updated_time)).toBeGreaterThanOrEqual(Date.parse(view.last_updated_time));

    // A secret ID that never expires shows Go's zero time, as Vault does.
    const forever = (await n.call('POST', `${base}/api/secret-id`, {})).body.data;
    const fv = (await n.call('POST', `${base}/api/secret-id/lookup`, { secret_id: forever.secret_id })).body.data;
    expect(fv).toMatchObject({ expiration_time: '0001-01-01T00:00:00Z', secret_id_ttl: 0, secret_id_num_uses: 0, metadata: {} });
  });

  it('answers unknown secret IDs and accessors as Vault does: 204, and 404 with the reason in data', async () => {
    const unknown = await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: 'never-issued' });
    expect(unknown.status).toBe(204);
    const byAccessor = await n.call('POST', `${base}/web/secret-id-accessor/lookup`, { secret_id_accessor: 'no-such-accessor' });
    expect(byAccessor.status).toBe(404);
    expect(byAccessor.body.data).toEqual({ error: 'failed to find accessor entry for secret_id_accessor: "no-such-accessor"' });
    expect(byAccessor.body.errors).toBeUndefined();
    // A secret ID of another role is not this role's.
    const other = (await n.call('POST', `${base}/api/secret-id`, {})).body.data;
    expect((await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: other.secret_id })).status).toBe(204);
    expect((await n.call('POST', `${base}/web/secret-id-accessor/lookup`, { secret_id_accessor: other.secret_id_accessor })).status).toBe(404);

    expect(await n.call('POST', `${base}/web/secret-id/lookup`, {})).toMatchObject({ status: 400, body: { errors: ['missing secret_id'] } });
    expect(await n.call('POST', `${base}/web/secret-id-accessor/lookup`, {})).toMatchObject({ status: 400, body: { errors: ['missing secret_id_accessor'] } });
    expect(await n.call('POST', `${base}/nope/secret-id/lookup`, { secret_id: 'x' })).toMatchObject({ status: 400, body: { errors: ['role "nope" does not exist'] } });
    expect((await n.call('GET', `${base}/web/secret-id/lookup`)).status).toBe(405);
  });
});

describe('destroy', () => {
  it('destroys by secret ID and by accessor, with POST or DELETE; login then fails', async () => {
    const rid = await roleId('api');
    for (const [method, how] of [['POST', 'secret-id'], ['DELETE', 'secret-id'], ['POST', 'accessor'], ['DELETE', 'accessor']] as const) {
      const made = (await n.call('POST', `${base}/api/secret-id`, {})).body.data;
      const field: Record<string, string> = how === 'secret-id' ? { secret_id: made.secret_id } : { secret_id_accessor: made.secret_id_accessor };
      const path = `${base}/api/${how === 'secret-id' ? 'secret-id' : 'secret-id-accessor'}/destroy`;
      const r = method === 'POST' ? await n.call('POST', path, field) : await n.call('DELETE', `${path}?${new URLSearchParams(field).toString()}`);
      expect([method, how, r.status]).toEqual([method, how, 204]);
      expect(await accessors('api')).not.toContain(made.secret_id_accessor);
      expect((await n.call('POST', `${base}/api/secret-id/lookup`, { secret_id: made.secret_id })).status).toBe(204);
      expect((await login(rid, made.secret_id)).status).toBe(400);
    }
    // A DELETE may carry the field in its body too.
    const made = (await n.call('POST', `${base}/api/secret-id`, {})).body.data;
    expect((await n.call('DELETE', `${base}/api/secret-id/destroy`, { secret_id: made.secret_id })).status).toBe(204);
    expect((await login(rid, made.secret_id)).status).toBe(400);
  });

  it('refuses what it cannot destroy and changes nothing', async () => {
    const kept = (await n.call('POST', `${base}/web/secret-id`, {})).body.data;
    const before = await accessors('web');
    // Vault: an unknown secret ID is no error (204); an unknown accessor is one (404 here, a 500 in Vault).
    expect((await n.call('POST', `${base}/web/secret-id/destroy`, { secret_id: 'never-issued' })).status).toBe(204);
    expect(await n.call('POST', `${base}/web/secret-id-accessor/destroy`, { secret_id_accessor: 'nope' })).toMatchObject({
      status: 404,
      body: { errors: ['failed to find accessor entry for secret_id_accessor: "nope"'] },
    });
    // Through another role, this role's secret ID and accessor are unknown.
    expect((await n.call('POST', `${base}/api/secret-id/destroy`, { secret_id: kept.secret_id })).status).toBe(204);
    expect((await n.call('POST', `${base}/api/secret-id-accessor/destroy`, { secret_id_accessor: kept.secret_id_accessor })).status).toBe(404);
    expect(await n.call('POST', `${base}/web/secret-id/destroy`, {})).toMatchObject({ status: 400, body: { errors: ['missing secret_id'] } });
    // Only a DELETE takes its field from the query string, as Vault parses requests.
    expect((await n.call('POST', `${base}/web/secret-id/destroy?secret_id=${kept.secret_id}`, {})).status).toBe(400);
    expect(await n.call('DELETE', `${base}/web/secret-id-accessor/destroy`)).toMatchObject({ status: 400, body: { errors: ['missing secret_id_accessor'] } });
    expect((await n.call('POST', `${base}/nope/secret-id/destroy`, { secret_id: kept.secret_id })).status).toBe(400);
    expect(await accessors('web')).toEqual(before);
    expect((await login(await roleId('web'), kept.secret_id)).status).toBe(200);
  });
});

describe('namespaces', () => {
  it('keeps a role\'s secret IDs inside its namespace', async () => {
    const a = { 'X-Vault-Namespace': 'ns-a' };
    const b = { 'X-Vault-Namespace': 'ns-b' };
    for (const ns of ['ns-a', 'ns-b']) {
      expect((await n.call('POST', `sys/namespaces/${ns}`)).status).toBe(200);
      const h = { headers: { 'X-Vault-Namespace': ns } };
      await n.call('POST', 'sys/auth/approle', { type: 'approle' }, h);
      await n.call('POST', `${base}/web`, {}, h);
    }
    const made = (await n.call('POST', `${base}/web/custom-secret-id`, { secret_id: 'ns-secret' }, { headers: a })).body.data;
    // Through namespace B (header or path prefix), A's secret ID does not exist.
    expect((await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: 'ns-secret' }, { headers: b })).status).toBe(204);
    expect((await n.call('POST', `ns-b/${base}/web/secret-id/lookup`, { secret_id: 'ns-secret' })).status).toBe(204);
    expect((await n.call('POST', `${base}/web/secret-id-accessor/lookup`, { secret_id_accessor: made.secret_id_accessor }, { headers: b })).status).toBe(404);
    expect((await n.call('POST', `${base}/web/secret-id/destroy`, { secret_id: 'ns-secret' }, { headers: b })).status).toBe(204);
    expect((await n.call('POST', `${base}/web/secret-id-accessor/destroy`, { secret_id_accessor: made.secret_id_accessor }, { headers: b })).status).toBe(404);
    // Nor through the root namespace's own mount.
    expect((await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: 'ns-secret' })).status).toBe(204);
    // B may register the same secret ID for its own role: another secret ID.
    expect((await n.call('POST', `${base}/web/custom-secret-id`, { secret_id: 'ns-secret' }, { headers: b })).status).toBe(200);
    // Still there in A, and it logs in there.
    const seen = await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: 'ns-secret' }, { headers: a });
    expect(seen.body.data.secret_id_accessor).toBe(made.secret_id_accessor);
    expect((await login(await roleId('web', a), 'ns-secret', a)).status).toBe(200);
    expect((await n.call('POST', `${base}/web/secret-id-accessor/destroy`, { secret_id_accessor: made.secret_id_accessor }, { headers: a })).status).toBe(204);
    expect((await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: 'ns-secret' }, { headers: a })).status).toBe(204);
    expect((await n.call('POST', `${base}/web/secret-id/lookup`, { secret_id: 'ns-secret' }, { headers: b })).status).toBe(200);
  });
});
