/**
 * Issue 27, answers 1 and 4, as Vault gives them. A read of a deleted or destroyed KV v2 version
 * is a 404 whose body is Vault's envelope with `data: null` and the version's metadata, and no
 * `errors` (vault-plugin-secrets-kv path_data.go, logical.RespondWithStatusCode). A LIST with no
 * keys is a 404 `{"errors":[]}` (sdk/logical/response_util.go RespondErrorCommon), whatever
 * answers it: auth method routes, system routes, mounted engines.
 */
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
  await n.call('POST', 'sys/mounts/kv', { type: 'kv', options: { version: '2' } });
  await n.call('POST', 'sys/mounts/old', { type: 'kv', options: { version: '1' } });
}, 30_000);
afterAll(async () => n.stop());

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
/** Vault's envelope around `data`, as RespondWithStatusCode marshals it. */
const envelope = (data: unknown) => ({ request_id: expect.any(String), lease_id: '', renewable: false, lease_duration: 0, data, wrap_info: null, warnings: null, auth: null, mount_type: '' });

describe('a read of a deleted KV v2 version', () => {
  it('answers 404 with the version\'s metadata in Vault\'s envelope, soft-deleted or destroyed', async () => {
    await n.call('POST', 'kv/data/app', { data: { v: 1 } });
    await n.call('POST', 'kv/data/app', { data: { v: 2 } });
    await n.call('POST', 'kv/metadata/app', { custom_metadata: { owner: 'ops' } });
    expect((await n.call('DELETE', 'kv/data/app')).status).toBe(204);

    const deleted = await n.call('GET', 'kv/data/app');
    expect(deleted.status).toBe(404);
    expect(deleted.body).toEqual(envelope({
      data: null,
      metadata: { created_time: expect.stringMatching(RFC3339), custom_metadata: { owner: 'ops' }, deletion_time: expect.stringMatching(RFC3339), destroyed: false, version: 2 },
    }));
    expect((await n.call('GET', 'kv/data/app?version=2')).body).toEqual({ ...deleted.body, request_id: expect.any(String) });

    expect((await n.call('POST', 'kv/destroy/app', { versions: [1] })).status).toBe(204);
    const destroyed = await n.call('GET', 'kv/data/app?version=1');
    expect(destroyed.status).toBe(404);
    expect(destroyed.body).toEqual(envelope({
      data: null,
      metadata: { created_time: expect.stringMatching(RFC3339), custom_metadata: { owner: 'ops' }, deletion_time: '', destroyed: true, version: 1 },
    }));

    // A patch of a deleted latest version: Vault's patch answers the metadata alone with the 404.
    const patched = await n.call('PATCH', 'kv/data/app', { data: { v: 3 } }, { headers: { 'Content-Type': 'application/merge-patch+json' } });
    expect(patched.status).toBe(404);
    expect(patched.body.data).toMatchObject({ version: 2, destroyed: false, deletion_time: expect.stringMatching(RFC3339) });

    // What never existed stays Vault's plain 404.
    expect(await n.call('GET', 'kv/data/app?version=9')).toMatchObject({ status: 404, body: { errors: [] } });
    expect(await n.call('GET', 'kv/data/none')).toMatchObject({ status: 404, body: { errors: [] } });
    // Undeleted, it reads again.
    await n.call('POST', 'kv/undelete/app', { versions: [2] });
    expect((await n.call('GET', 'kv/data/app')).body.data.data).toEqual({ v: 2 });
  });
});

describe('a LIST with no keys', () => {
  const notFound = { status: 404, body: { errors: [] } };

  it('answers 404 for auth method lists (approle roles and secret IDs, userpass users), 200 once there are keys', async () => {
    await n.call('POST', 'sys/auth/approle', { type: 'approle' });
    await n.call('POST', 'sys/auth/userpass', { type: 'userpass' });
    expect(await n.call('LIST', 'auth/approle/role')).toMatchObject(notFound);
    expect(await n.call('GET', 'auth/approle/role?list=true')).toMatchObject(notFound);
    expect(await n.call('LIST', 'auth/userpass/users')).toMatchObject(notFound);

    await n.call('POST', 'auth/approle/role/web', {});
    await n.call('POST', 'auth/userpass/users/alice', { password: 'pw' });
    expect((await n.call('LIST', 'auth/approle/role')).body.data).toEqual({ keys: ['web'] });
    expect((await n.call('LIST', 'auth/userpass/users')).body.data).toEqual({ keys: ['alice'] });
    expect(await n.call('LIST', 'auth/approle/role/web/secret-id')).toMatchObject(notFound);
    const sid = (await n.call('POST', 'auth/approle/role/web/secret-id', {})).body.data;
    expect((await n.call('LIST', 'auth/approle/role/web/secret-id')).body.data).toEqual({ keys: [sid.secret_id_accessor] });
    // An unknown role is still the role's error, not an empty list.
    expect((await n.call('LIST', 'auth/approle/role/nope/secret-id')).status).toBe(400);
  });

  it('answers 404 for child namespaces and for mounted engines alike', async () => {
    expect((await n.call('POST', 'sys/namespaces/leaf')).status).toBe(200);
    expect(await n.call('LIST', 'sys/namespaces', undefined, { headers: { 'X-Vault-Namespace': 'leaf' } })).toMatchObject(notFound);
    expect((await n.call('LIST', 'sys/namespaces')).body.data.keys).toContain('leaf/');
    expect(await n.call('LIST', 'kv/metadata/nothing')).toMatchObject(notFound);
    expect(await n.call('LIST', 'old/nothing')).toMatchObject(notFound);
    await n.call('POST', 'old/here/x', { a: 1 });
    expect((await n.call('LIST', 'old/here')).body.data).toEqual({ keys: ['x'] });
  });

  it('answers a wrapped empty LIST with its wrapping token, as Vault wraps before the rule applies', async () => {
    const r = await n.call('LIST', 'kv/metadata/nothing', undefined, { headers: { 'X-Vault-Wrap-TTL': '60' } });
    expect(r.status).toBe(200);
    expect(r.body.wrap_info).toMatchObject({ ttl: 60 });
  });
});
