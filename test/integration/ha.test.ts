/**
 * HA inside a cluster (issue 19): three in-process nodes on one private PostgreSQL with
 * `ha_enabled` (test/harness/ha.ts), one cluster shared by the cases that leave it as they found it
 * (every node up and unsealed, one active that every other names); the hand-over case stops a node,
 * so it has its own. Exactly one is active; standbys relay every request to it over the cluster port
 * and answer as it did (307 with X-Vault-No-Request-Forwarding), health says 473 on a (performance) standby,
 * sys/leader and sys/ha-status name the active node, sys/step-down and a stopped active node hand
 * over to a standby, and the lock row deleted behind the nodes' backs fences the active node's
 * next commit and a node takes over again, with every acknowledged write present. Group commit
 * keeps batching concurrent writes under the fence.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { metricSample, vault } from '../harness/http.js';
import { eventually } from '../harness/eventually.js';
import { startHaCluster, type HaCluster, type InProcessHaNode } from '../harness/ha.js';
import { useHarness } from '../harness/harness.js';
import { sqlRows, usePostgres } from '../support/postgres.js';

type TestNode = InProcessHaNode;

const h = useHarness();
const postgres = usePostgres();

let shared: HaCluster<TestNode>;
beforeAll(async () => {
  shared = await startHaCluster(h, { inProcess: true, postgres: postgres(), database: 'ha_shared' });
}, 60_000);

/** The shared cluster, its nodes by index, and its database's URL. */
const cluster = (): { url: string; all: TestNode[]; c: HaCluster<TestNode> } => ({ url: shared.url, all: [...shared.nodes], c: shared });

// Each case leaves the shared cluster as it found it: every node answers, unsealed, and names the
// one active node (active() asks all three).
afterEach(async () => {
  await shared.active();
  for (const n of shared.nodes) expect((await n.call('GET', 'sys/seal-status', undefined, { token: null })).body.sealed).toBe(false);
});

describe('HA on PostgreSQL', () => {
  it('redirects and names in sys/leader only the address the active node states over the cluster port, never the lock row\'s (issue 26 item 8)', async () => {
    const { url, all, c } = cluster();
    const active = await c.active();
    const standby = all.find((n) => n !== active) as TestNode;
    const evil = 'http://evil.invalid:8200';
    // Something that is not a member listens at the cluster address the row is changed to.
    const stranger = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => stranger.listen(0, '127.0.0.1', resolve));
    const strangerAddr = `127.0.0.1:${(stranger.address() as AddressInfo).port}`;
    const [real] = await sqlRows<{ api_addr: string; cluster_addr: string }>(url, 'SELECT api_addr, cluster_addr FROM vault_ha_locks');
    const realCluster = real!.cluster_addr;
    const redirectOf = async () => {
      const agent = new http.Agent();
      try {
        // A write: a performance standby answers reads itself, whatever the header says.
        return await vault(standby.apiAddr, standby.rootToken, { agent }).post('sys/mounts/redirected', { type: 'kv' }, { headers: { 'X-Vault-No-Request-Forwarding': 'true' } });
      } finally {
        agent.destroy();
      }
    };
    try {
      // Whoever can write the row points it elsewhere: the standby reads it (its cluster address
      // shows), but names no API address and redirects nowhere: the stranger confirmed nothing.
      await sqlRows(url, 'UPDATE vault_ha_locks SET api_addr = $1, cluster_addr = $2', [evil, strangerAddr]);
      await eventually(async () => expect((await standby.call('GET', 'sys/leader', undefined, { token: null })).body.leader_cluster_address).toBe(`https://${strangerAddr}`), { timeoutMs: 10_000 });
      expect((await standby.call('GET', 'sys/leader', undefined, { token: null })).body.leader_address).toBe('');
      const refused = await redirectOf();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('location')).toBeNull();
      // The row's cluster address back, its api_addr still forged: the address the active node
      // states is the one named and redirected to.
      await sqlRows(url, 'UPDATE vault_ha_locks SET cluster_addr = $1', [realCluster]);
      await eventually(async () => expect((await standby.call('GET', 'sys/leader', undefined, { token: null })).body).toMatchObject({ leader_cluster_address: `https://${realCluster}`, leader_address: active.apiAddr }), { timeoutMs: 10_000 });
      const redirect = await redirectOf();
      expect(redirect.status).toBe(307);
      expect(redirect.headers.get('location')).toBe(`${active.apiAddr}/v1/sys/mounts/redirected`);
    } finally {
      await new Promise((resolve) => stranger.close(resolve));
      // The row as the active node wrote it: the cluster as the case found it.
      await sqlRows(url, 'UPDATE vault_ha_locks SET api_addr = $1, cluster_addr = $2', [real!.api_addr, realCluster]);
    }
  });

  it('has one active node; standbys relay to it, answer 307 on request, and say 473 in health (performance standbys)', async () => {
    const { all, c } = cluster();
    const active = await c.active();
    const [a, b] = all.filter((n) => n !== active) as [TestNode, TestNode];

    // A standby relays a mount, a write and a read: the active node ran them.
    expect((await a.call('POST', 'sys/mounts/basic', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    const written = await a.call('PUT', 'basic/data/app', { data: { password: 'relayed' } });
    expect(written.status).toBe(200);
    expect(written.body.data.version).toBe(1);
    expect((await b.call('GET', 'basic/data/app')).body.data.data).toEqual({ password: 'relayed' });
    expect((await active.call('GET', 'basic/data/app')).body.data.data).toEqual({ password: 'relayed' });
    // Refusals come back as the active node gave them.
    expect((await a.call('GET', 'basic/data/app', undefined, { token: 'not-a-token' })).status).toBe(403);
    expect((await a.call('GET', 'basic/data/missing')).status).toBe(404);

    // Over plain node:http, which does not follow redirects (the api client's fetch would).
    const agent = new http.Agent();
    // A write: a performance standby answers reads itself, whatever the header says.
    const redirect = await vault(a.apiAddr, a.rootToken, { agent }).post('basic/data/app', { data: { password: 'redirected' } }, { headers: { 'X-Vault-No-Request-Forwarding': 'true' } });
    agent.destroy();
    expect(redirect.status).toBe(307);
    expect(redirect.headers.get('location')).toBe(`${active.apiAddr}/v1/basic/data/app`);

    // A standby serves reads (473) once it has seen the replication state, soon after it is a standby.
    await eventually(async () => expect((await a.call('GET', 'sys/health', undefined, { token: null })).status).toBe(473), { timeoutMs: 5_000 });
    // Vault's: standbyok alone does not make a performance standby 200, perfstandbyok does.
    expect((await a.call('GET', 'sys/health?standbyok=true', undefined, { token: null })).status).toBe(473);
    const ok = await a.call('GET', 'sys/health?perfstandbyok=true', undefined, { token: null });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ standby: true, sealed: false });
    expect((await active.call('GET', 'sys/health', undefined, { token: null })).body).toMatchObject({ standby: false });

    const ha = await b.call('GET', 'sys/ha-status');
    expect(ha.status).toBe(200);
    expect(ha.body.nodes).toEqual(ha.body.data.nodes);
    expect(ha.body.nodes).toHaveLength(3);
    const actives = ha.body.nodes.filter((n: { active_node: boolean }) => n.active_node);
    expect(actives).toEqual([expect.objectContaining({ api_address: active.apiAddr, last_echo: null })]);
    for (const n of ha.body.nodes.filter((x: { active_node: boolean }) => !x.active_node)) expect(typeof n.last_echo).toBe('string');
    expect((await b.call('GET', 'sys/ha-status', undefined, { token: null })).status).toBe(403);

    // Group commit keeps working under the fence: 32 concurrent writes (half relayed by the
    // standbys) share fenced transactions on the active node.
    const counters = async (): Promise<{ batches: number; txns: number }> => {
      const text = (await active.call('GET', 'sys/metrics?format=prometheus')).text;
      return { batches: metricSample(text, 'tessera_group_commit_batch_transactions_count'), txns: metricSample(text, 'tessera_group_commit_batch_transactions_sum') };
    };
    const before = await counters();
    const writes = await Promise.all(Array.from({ length: 32 }, (_, i) => [active, a, b][i % 3]!.call('PUT', `basic/data/group/${i}`, { data: { i } })));
    expect(writes.map((w) => w.status)).toEqual(Array(32).fill(200));
    const after = await counters();
    expect(after.txns - before.txns).toBeGreaterThanOrEqual(32);
    expect(after.batches - before.batches).toBeLessThan(after.txns - before.txns);
  });

  it('hands over on sys/step-down and when the active node stops, with every acknowledged write kept', async () => {
    // It stops a node: a cluster of its own, closed at the case's end.
    const c = await startHaCluster(h, { inProcess: true, postgres: postgres(), database: 'ha_handover' });
    const all = [...c.nodes];
    const first = await c.active();
    expect((await first.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    for (let i = 0; i < 10; i++) expect((await first.call('PUT', `secret/data/k${i}`, { data: { i } })).status).toBe(200);

    // Step-down through a standby: relayed to the active node, which gives up the lease.
    const standby = all.find((n) => n !== first) as TestNode;
    expect((await standby.call('PUT', 'sys/step-down', {})).status).toBe(204);
    const second = await c.active({ not: first });
    for (let i = 10; i < 20; i++) expect((await first.call('PUT', `secret/data/k${i}`, { data: { i } })).status).toBe(200);

    // The active node stops (as on SIGTERM): it releases the lease and another takes over.
    await second.stop();
    const rest = all.filter((n) => n !== second);
    const third = await c.active({ among: rest, not: second });
    for (let i = 20; i < 30; i++) expect((await third.call('PUT', `secret/data/k${i}`, { data: { i } })).status).toBe(200);
    for (const n of rest) {
      for (const i of [0, 9, 10, 19, 20, 29]) expect((await n.call('GET', `secret/data/k${i}`)).body.data.data).toEqual({ i });
    }
    await c.close();
  });

  it('fences the active node when the lock row is deleted behind its back, and a node takes over', async () => {
    const { url, c } = cluster();
    const first = await c.active();
    expect((await first.call('POST', 'sys/mounts/fence', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    const [before] = await sqlRows<{ epoch: string }>(url, 'SELECT epoch::text AS epoch FROM vault_ha_locks');
    await sqlRows(url, 'DELETE FROM vault_ha_locks');
    // Its next commit finds no row with its epoch: refused with nothing written, or (after a new
    // takeover) relayed. Either answer says what happened; none acknowledges an unwritten write.
    const acknowledged: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await first.call('PUT', `fence/data/k${i}`, { data: { i } });
      if (r.status === 200) acknowledged.push(i);
      else {
        expect(r.status).toBe(503);
        expect(JSON.stringify(r.body)).toMatch(/nothing was written|not active|not found/);
      }
    }
    const now = await c.active();
    const [after] = await sqlRows<{ epoch: string }>(url, 'SELECT epoch::text AS epoch FROM vault_ha_locks');
    expect(Number(after?.epoch)).toBeGreaterThan(Number(before?.epoch));
    expect((await now.call('PUT', 'fence/data/after', { data: { ok: true } })).status).toBe(200);
    for (const i of acknowledged) expect((await now.call('GET', `fence/data/k${i}`)).body.data.data).toEqual({ i });
  });
});
