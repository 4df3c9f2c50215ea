/**
 * What an HA standby answers itself is as current as the active node (issue 26 item 11): a policy
 * edited or deleted on the active node no longer lets its token read sys/metrics or seal a
 * standby, with no wait; a mount disabled on the active node is gone from the standby's table at
 * the standby's next token check. Two in-process nodes on one private PostgreSQL with `ha_enabled`.
 */
import { eventually } from '../harness/eventually.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { usePostgres } from '../support/postgres.js';

const postgres = usePostgres();

let all: TestNode[] = [];

beforeAll(async () => {
  const url = await postgres().createDatabase('ha_standby_current');
  const postgresql = { connectionUrl: url, haEnabled: true };
  const first = await startTestNode({ postgresql });
  const second = await startTestNode({ postgresql, initialize: false });
  all = [first, second];
  second.rootToken = first.rootToken;
  second.unsealKeys = first.unsealKeys;
  for (const key of first.unsealKeys.slice(0, 2)) expect((await second.call('PUT', 'sys/unseal', { key }, { token: null })).status).toBe(200);
});

afterAll(async () => {
  for (const n of all.reverse()) await n.stop();
});

/** The active node and the standby, once the standby names the active one as leader. */
async function roles(): Promise<{ active: TestNode; standby: TestNode }> {
  return eventually(
    async () => {
      const leaders = await Promise.all(all.map(async (n) => (await n.call('GET', 'sys/leader', undefined, { token: null })).body));
      const i = leaders.findIndex((l) => l.is_self === true);
      expect(i).toBeGreaterThanOrEqual(0);
      const active = all[i]!;
      const standby = all[1 - i]!;
      expect(leaders[1 - i]).toMatchObject({ is_self: false, leader_address: active.apiAddr });
      return { active, standby };
    },
    { timeoutMs: 15_000 },
  );
}

const GRANT = 'path "sys/seal" { capabilities = ["update", "sudo"] }\npath "sys/metrics" { capabilities = ["read"] }';
const NOTHING = 'path "secret/nothing" { capabilities = ["deny"] }';

describe('an HA standby answers from state as current as the active node', () => {
  it('refuses a token at once on its local paths when the active node removed its policy\'s grant (edited or deleted) (issue 26 item 11)', async () => {
    const { active, standby } = await roles();
    expect((await active.call('PUT', 'sys/policies/acl/sealer', { policy: GRANT })).status).toBe(204);
    const created = await active.call('POST', 'auth/token/create', { policies: ['sealer'], no_default_policy: true });
    expect(created.status).toBe(200);
    const token = String(created.body.auth.client_token);
    // The standby has checked the token against the policy once (its cache holds it).
    expect((await standby.call('GET', 'sys/metrics', undefined, { token })).status).toBe(200);

    expect((await active.call('PUT', 'sys/policies/acl/sealer', { policy: NOTHING })).status).toBe(204);
    expect((await standby.call('GET', 'sys/metrics', undefined, { token })).status).toBe(403);
    expect((await standby.call('PUT', 'sys/seal', undefined, { token })).status).toBe(403);
    expect((await standby.call('GET', 'sys/seal-status', undefined, { token: null })).body.sealed).toBe(false);

    expect((await active.call('PUT', 'sys/policies/acl/sealer', { policy: GRANT })).status).toBe(204);
    expect((await standby.call('GET', 'sys/metrics', undefined, { token })).status).toBe(200);
    expect((await active.call('DELETE', 'sys/policies/acl/sealer')).status).toBe(204);
    expect((await standby.call('GET', 'sys/metrics', undefined, { token })).status).toBe(403);
    expect((await standby.call('PUT', 'sys/seal', undefined, { token })).status).toBe(403);
    expect((await standby.call('GET', 'sys/seal-status', undefined, { token: null })).body.sealed).toBe(false);
    expect((await active.call('PUT', 'sys/seal', undefined, { token })).status).toBe(403);
  });

  it('holds a mount enabled or disabled on the active node at its next token check (issue 26 item 11)', async () => {
    const { active, standby } = await roles();
    expect((await active.call('POST', 'sys/mounts/kv-gone', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await standby.call('GET', 'sys/metrics')).status).toBe(200);
    expect(standby.node.core.mounts.resolve('', 'kv-gone/data/x')).toBeDefined();
    expect((await active.call('DELETE', 'sys/mounts/kv-gone')).status).toBe(204);
    expect((await standby.call('GET', 'sys/metrics')).status).toBe(200);
    expect(standby.node.core.mounts.resolve('', 'kv-gone/data/x')).toBeUndefined();
  });
});
