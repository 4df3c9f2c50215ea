/**
 * The LIST method through an HA standby (issue 26 item 3): two nodes on one private PostgreSQL,
 * real processes (test/harness/ha.ts). A client's `LIST` reaches a node as GET plus that process's own random marker
 * (src/http/list-method.ts); a standby relays it to the active node as an explicit LIST, so every
 * LIST route answers through the standby what the active node answers itself: KV v1 and v2
 * (metadata/, nested, in a namespace), the ACL policies (both paths), child namespaces, userpass
 * users, approle roles and secret-id accessors, and sys/mounts and sys/auth (read-only routes,
 * refused the same way). A client's own marker header, relayed or not, never makes a GET a LIST.
 */
import { jest } from '@jest/globals';
import { must, startHaCluster, useHarness, type VaultHttp } from '../harness/index.js';

jest.setTimeout(180_000);

const h = useHarness();

let active: VaultHttp;
let standby: VaultHttp;

beforeAll(async () => {
  const c = await startHaCluster(h, { nodes: 2 });
  active = (await c.active()).vault();
  standby = (await c.standbys())[0]!.vault();

  const a = active;
  await must(a.post('sys/mounts/secret', { type: 'kv', options: { version: '2' } }));
  await must(a.post('sys/mounts/kv', { type: 'kv', options: { version: '1' } }));
  for (const k of ['app', 'dir/one', 'dir/sub/two']) {
    await must(a.put(`secret/data/${k}`, { data: { v: k } }));
    await must(a.put(`kv/${k}`, { v: k }));
  }
  await must(a.put('sys/policies/acl/readers', { policy: 'path "secret/*" { capabilities = ["read", "list"] }' }));
  await must(a.post('sys/namespaces/team'));
  await must(a.post('sys/namespaces/team/app'));
  await must(a.post('sys/mounts/secret', { type: 'kv', options: { version: '2' } }, { headers: { 'X-Vault-Namespace': 'team' } }));
  await must(a.put('secret/data/in-team', { data: { v: 1 } }, { headers: { 'X-Vault-Namespace': 'team' } }));
  await must(a.post('sys/auth/userpass', { type: 'userpass' }));
  await must(a.post('auth/userpass/users/alice', { password: 'pw-alice-1' }));
  await must(a.post('auth/userpass/users/bob', { password: 'pw-bob-1' }));
  await must(a.post('sys/auth/approle', { type: 'approle' }));
  await must(a.post('auth/approle/role/ci', { token_policies: ['readers'] }));
  await must(a.post('auth/approle/role/deploy', {}));
  await must(a.post('auth/approle/role/ci/secret-id', {}));
});

/** What a reply says, without what differs between any two answers (request ids). */
function answer(r: { status: number; body: unknown }): unknown {
  const body = r.body !== null && typeof r.body === 'object' ? { ...(r.body as Record<string, unknown>), request_id: undefined } : r.body;
  return { status: r.status, body };
}

const NS = { 'X-Vault-Namespace': 'team' };

/** [path, headers, the keys the active node lists there (undefined: not a list route)]. */
const LISTS: readonly (readonly [string, Readonly<Record<string, string>>, readonly string[] | undefined])[] = [
  ['secret/metadata/', {}, ['app', 'dir/']],
  ['secret/metadata/dir/', {}, ['one', 'sub/']],
  ['secret/metadata/dir', {}, ['one', 'sub/']],
  ['kv/', {}, ['app', 'dir/']],
  ['kv/dir/sub/', {}, ['two']],
  ['secret/metadata/', NS, ['in-team']],
  ['team/secret/metadata/', {}, ['in-team']],
  ['sys/policies/acl', {}, ['default', 'readers', 'root']],
  ['sys/policy', {}, ['default', 'readers', 'root']],
  ['sys/namespaces', {}, ['team/']],
  ['sys/namespaces', NS, ['app/']],
  ['auth/userpass/users', {}, ['alice', 'bob']],
  ['auth/approle/role', {}, ['ci', 'deploy']],
  ['sys/mounts', {}, undefined],
  ['sys/auth', {}, undefined],
];

describe.each(LISTS)('LIST %s %j', (path, headers, keys) => {
  it('answers through the standby what the active node answers', async () => {
    const here = await active.request('LIST', path, { headers });
    if (keys !== undefined) {
      expect(here.status).toBe(200);
      expect(here.body.data.keys).toEqual(keys);
    }
    const relayed = await standby.request('LIST', path, { headers });
    expect(answer(relayed)).toEqual(answer(here));
    // And the same as the query form, which never needed the method.
    if (keys !== undefined) expect(answer(await standby.list(path, { headers }))).toEqual(answer(here));
  });
});

test('LIST of a role\'s secret-id accessors through the standby answers the active node\'s list', async () => {
  const here = await active.request('LIST', 'auth/approle/role/ci/secret-id');
  expect(here.status).toBe(200);
  expect(here.body.data.keys).toHaveLength(1);
  expect(answer(await standby.request('LIST', 'auth/approle/role/ci/secret-id'))).toEqual(answer(here));
});

test('a client\'s own marker header does not make a GET a LIST, on either node', async () => {
  const forged = { 'X-Tessera-Method': 'LIST 00000000000000000000000000000000' };
  const read = await active.get('secret/metadata/');
  expect(read.status).toBe(404);
  for (const v of [active, standby]) {
    const r = await v.get('secret/metadata/', { headers: forged });
    expect(answer(r)).toEqual(answer(read));
  }
});
