/**
 * What an HA standby answers itself is as current as the active node (issue 26 items 11 and 4):
 * a policy edited or deleted on the active node no longer lets its token read sys/metrics or seal
 * a standby, with no wait; a mount disabled on the active node is gone from the standby's table at
 * the standby's next token check; standby health shows the replication modes and cluster id the
 * active node holds; and after PostgreSQL restarts, a standby is a healthy standby again within a
 * lease period. Two in-process nodes on one private PostgreSQL with `ha_enabled` (test/harness/ha.ts).
 */
import { eventually } from '../harness/eventually.js';
import { startHaCluster, type HaCluster, type InProcessHaNode } from '../harness/ha.js';
import { useHarness } from '../harness/harness.js';
import { usePostgres } from '../support/postgres.js';

type TestNode = InProcessHaNode;

const h = useHarness();
const postgres = usePostgres();

/** The lock row's lifetime (the default `ha_lease_ttl`). */
const LEASE_MS = 2000;

let c: HaCluster<TestNode>;

beforeAll(async () => {
  c = await startHaCluster(h, { inProcess: true, nodes: 2, postgres: postgres(), database: 'ha_standby_current' });
});

/** The active node and the standby, once the standby names the active one as leader. */
async function roles(): Promise<{ active: TestNode; standby: TestNode }> {
  const active = await c.active();
  return { active, standby: c.nodes.find((n) => n !== active)! };
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

  it('shows in sys/health the replication modes and cluster id the active node holds, within a lease period of a change (issue 26 item 4a)', async () => {
    const { active, standby } = await roles();
    expect((await active.call('PUT', 'sys/replication/dr/primary/enable', {})).status).toBeLessThan(300);
    expect((await active.call('PUT', 'sys/replication/performance/primary/enable', {})).status).toBeLessThan(300);
    const same = async (): Promise<Record<string, unknown>> => {
      const mine = (await active.call('GET', 'sys/health', undefined, { token: null })).body;
      const theirs = await standby.call('GET', 'sys/health', undefined, { token: null });
      expect(theirs.status).toBe(473); // a performance standby
      for (const k of ['replication_dr_mode', 'replication_performance_mode', 'cluster_id']) expect(theirs.body[k]).toEqual(mine[k]);
      return theirs.body;
    };
    const enabled = await eventually(same, { timeoutMs: LEASE_MS });
    expect(enabled).toMatchObject({ replication_dr_mode: 'primary', replication_performance_mode: 'primary' });
    expect(enabled.cluster_id).not.toBe('');
    expect((await active.call('POST', 'sys/replication/performance/primary/disable', {})).status).toBeLessThan(300);
    const disabled = await eventually(same, { timeoutMs: LEASE_MS });
    expect(disabled).toMatchObject({ replication_dr_mode: 'primary', replication_performance_mode: 'disabled' });
  });

  it('is a healthy standby again within a lease period of PostgreSQL answering after a restart (issue 26 item 4b)', async () => {
    const { standby } = await roles();
    await postgres().stopServer();
    try {
      // A read fails while the database is away: the standby records a storage fault.
      await eventually(async () => expect((await standby.call('GET', 'sys/health', undefined, { token: null })).body.storage_failed).toBe(true), { timeoutMs: 20_000, intervalMs: 100 });
    } finally {
      await postgres().startServer();
    }
    const back = await roles();
    await eventually(async () => {
      const health = await back.standby.call('GET', 'sys/health', undefined, { token: null });
      expect(health.body.storage_failed).toBe(false);
      expect(health.status).toBe(473); // a performance standby again
    }, { timeoutMs: LEASE_MS + 1500, intervalMs: 100 });
  });
});

describe('an HA standby after the active node rotates the key (issue 27 item 3)', () => {
  it('checks a token written under the new term, and reads everything once it is the active node', async () => {
    const { active, standby } = await roles();
    expect((await active.call('POST', 'sys/mounts/rotated', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await active.call('PUT', 'rotated/data/before', { data: { v: 1 } })).status).toBe(200);
    const term = (await active.call('GET', 'sys/key-status')).body.data.term as number;
    expect((await active.call('PUT', 'sys/rotate', {})).status).toBe(204);
    expect((await active.call('PUT', 'sys/policies/acl/metrics', { policy: 'path "sys/metrics" { capabilities = ["read"] }' })).status).toBe(204);
    const created = await active.call('POST', 'auth/token/create', { policies: ['metrics'] });
    const token = String(created.body.auth.client_token);
    expect((await active.call('PUT', 'rotated/data/after', { data: { v: 2 } })).status).toBe(200);
    // The standby checks the token itself: its entry is under the new term.
    expect((await standby.call('GET', 'sys/metrics', undefined, { token })).status).toBe(200);
    expect((await standby.call('GET', 'sys/health', undefined, { token: null })).body.sealed).toBe(false);

    expect((await active.call('PUT', 'sys/step-down', {})).status).toBe(204);
    await eventually(async () => expect((await standby.call('GET', 'sys/leader', undefined, { token: null })).body.is_self).toBe(true), { timeoutMs: 15_000 });
    expect((await standby.call('GET', 'rotated/data/before')).body.data.data).toEqual({ v: 1 });
    expect((await standby.call('GET', 'rotated/data/after')).body.data.data).toEqual({ v: 2 });
    expect((await standby.call('GET', 'sys/key-status')).body.data.term).toBe(term + 1);
    expect((await standby.call('PUT', 'sys/rotate', {})).status).toBe(204);
    expect((await standby.call('PUT', 'rotated/data/third', { data: { v: 3 } })).status).toBe(200);
  });
});
