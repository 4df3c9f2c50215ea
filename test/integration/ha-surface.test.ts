/**
 * Vault's HA surface, field for field (issue 28 item 2), on two in-process nodes sharing a private
 * PostgreSQL with `ha_enabled` (startHaCluster, test/harness/ha.ts); the second node's clock runs
 * SKEW_MS (3 s) ahead. sys/ha-status carries Vault's per-node fields with the values the members measured (the clock skew through the
 * database's clock, an echo's duration while the member table is locked); sys/health answers 474
 * while a standby's echoes go unanswered (the member table locked past three echo intervals) and
 * 473 on a performance standby (the HA fact, set here); sys/leader shows `last_wal` 0 on a
 * standby and refuses on a sealed or uninitialised node as Vault; an empty
 * X-Vault-No-Request-Forwarding is relayed, a non-empty one redirected. Debian's hvac, unmodified,
 * reads the health codes and sys/leader's fields and refusal (test/e2e/hvac/ha_surface.py).
 */
import http from 'node:http';
import pg from 'pg';
import { eventually } from '../harness/eventually.js';
import { startHaCluster, type HaCluster, type InProcessHaNode } from '../harness/ha.js';
import { useHarness, type InProcessNode } from '../harness/harness.js';
import { vault } from '../harness/http.js';
import { runHvac } from '../harness/hvac.js';
import { usePostgres } from '../support/postgres.js';

type TestNode = InProcessHaNode;

const h = useHarness();
const postgres = usePostgres();
const SKEW_MS = 3000;
/** How far a measured skew may be off: the two echoes' trips to the database differ (jest's loop is busy under load). */
const SKEW_SLACK_MS = 1000;

let c: HaCluster<TestNode>;
let nodes: TestNode[];
let url: string;
let active: TestNode;
let standby: TestNode;
/** The standby's clock minus the active node's. */
let standbyAhead: number;

beforeAll(async () => {
  // A 4 s lease: its statements time out at 2 s, so an echo waits out a member table locked ~1 s.
  // Plain standbys (429): the 473 of a performance standby is forced per case through the fact,
  // and shown by default in ha-perf-standby.test.ts. The first node is in zone-a; the second's
  // clock runs SKEW_MS ahead.
  c = await startHaCluster(h, {
    inProcess: true, nodes: 2, postgres: postgres(), database: 'ha_surface', leaseTtlMs: 4000, redundancyZone: (i) => (i === 0 ? 'zone-a' : undefined),
    node: (i) => ({ disablePerformanceStandby: true, ...(i === 1 ? { now: () => Date.now() + SKEW_MS } : {}) }),
  });
  ({ nodes, url } = c);
  active = await c.active();
  [standby] = (await c.standbys()) as [TestNode];
  standbyAhead = standby === nodes[1] ? SKEW_MS : -SKEW_MS;
  // A write, so the active node's last WAL index is above 0.
  expect((await active.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
  expect((await active.call('PUT', 'secret/data/surface', { data: { a: 1 } })).status).toBe(200);
}, 60_000);

/** Holds an exclusive lock on the member table (every echo waits, then times out) until `release`. */
async function lockMembers(): Promise<{ echoesWaiting(): Promise<number>; release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('BEGIN');
  await c.query('LOCK TABLE vault_ha_locks_members IN ACCESS EXCLUSIVE MODE');
  return {
    async echoesWaiting() {
      // Inside the transaction the statistics are a snapshot: cleared, so each call sees now.
      await c.query('SELECT pg_stat_clear_snapshot()');
      const r = await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%vault_ha_locks_members%'");
      return (r.rows[0] as { n: number }).n;
    },
    async release() {
      await c.query('COMMIT');
      await c.end();
    },
  };
}

const health = async (n: TestNode, query = '') => n.call('GET', `sys/health${query}`, undefined, { token: null });

describe('sys/ha-status', () => {
  it('has Vault\'s fields of every node with Vault\'s JSON types; the standby\'s clock skew is the active clock minus its own', async () => {
    await eventually(
      async () => {
        for (const n of [active, standby]) {
          const r = await n.call('GET', 'sys/ha-status');
          expect(r.status).toBe(200);
          const list = r.body.nodes as Record<string, unknown>[];
          expect(list).toHaveLength(2);
          for (const node of list) {
            // api/sys_hastatus.go: int64 for the ms fields, strings for the versions and zone.
            for (const k of ['echo_duration_ms', 'clock_skew_ms', 'replication_primary_canary_age_ms']) expect(Number.isInteger(node[k])).toBe(true);
            expect(node).toMatchObject({ upgrade_version: node['version'], replication_primary_canary_age_ms: 0 });
            // The first node has `autopilot_redundancy_zone` configured, the second none.
            expect(node['redundancy_zone']).toBe(node['api_address'] === nodes[0]!.apiAddr ? 'zone-a' : '');
          }
          const a = list.find((x) => x['active_node'] === true)!;
          const s = list.find((x) => x['active_node'] === false)!;
          expect(a).toMatchObject({ api_address: active.apiAddr, last_echo: null, echo_duration_ms: 0, clock_skew_ms: 0 });
          expect(s['api_address']).toBe(standby.apiAddr);
          expect(Math.abs((s['clock_skew_ms'] as number) + standbyAhead)).toBeLessThan(SKEW_SLACK_MS);
        }
      },
      { timeoutMs: 10_000 },
    );
    // sys/health on the standby shows the same skew, as Vault's standby does.
    await eventually(async () => expect(Math.abs((await health(standby)).body.clock_skew_ms + standbyAhead)).toBeLessThan(SKEW_SLACK_MS), { timeoutMs: 10_000 });
    expect((await health(active)).body).toMatchObject({ clock_skew_ms: 0, echo_duration_ms: 0, replication_primary_canary_age_ms: 0 });
  });

  it('shows how long the standby\'s echo took, as the standby measured it', async () => {
    const lock = await lockMembers();
    try {
      // Both nodes' next echoes wait for the lock (each within an echo interval); 400 ms more, then released.
      await eventually(async () => expect(await lock.echoesWaiting()).toBe(2), { timeoutMs: 5_000, intervalMs: 20 });
      await new Promise((resolve) => setTimeout(resolve, 400));
    } finally {
      await lock.release();
    }
    await eventually(
      async () => {
        const s = ((await active.call('GET', 'sys/ha-status')).body.nodes as Record<string, unknown>[]).find((x) => x['active_node'] === false)!;
        expect(s['echo_duration_ms']).toBeGreaterThanOrEqual(300);
      },
      { timeoutMs: 5_000, intervalMs: 50 },
    );
  });
});

describe('sys/health', () => {
  it('answers 474 (haunhealthycode) while the standby\'s echoes go unanswered, with Vault\'s fields, and 429 again once they are', async () => {
    const before = await health(standby);
    expect(before.status).toBe(429);
    expect(before.body).toMatchObject({ standby: true, ha_connection_healthy: true });
    expect(before.body.last_request_forwarding_heartbeat_ms).toBeLessThan(3000);
    const lock = await lockMembers();
    try {
      const r = await eventually(
        async () => {
          const h = await health(standby);
          expect(h.status).toBe(474);
          return h;
        },
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      expect(r.body).toMatchObject({ standby: true, ha_connection_healthy: false });
      expect(r.body.last_request_forwarding_heartbeat_ms).toBeGreaterThanOrEqual(3000);
      expect((await health(standby, '?haunhealthycode=299')).status).toBe(299);
      // standbyok does not hide it, as Vault's order.
      expect((await health(standby, '?standbyok=true')).status).toBe(474);
      // The active node has no heartbeat: neither the fields nor 474.
      const a = await health(active);
      expect(a.status).toBe(200);
      expect(a.body).not.toHaveProperty('ha_connection_healthy');
    } finally {
      await lock.release();
    }
    await eventually(async () => expect((await health(standby)).status).toBe(429), { timeoutMs: 10_000 });
    expect((await health(standby)).body.ha_connection_healthy).toBe(true);
    expect((await health(standby, '?haunhealthycode=abc')).status).toBe(400);
  });

  it('answers 473 on a performance standby unless perfstandbyok, with performancestandbycode; sys/leader says so', async () => {
    const facts = standby.node.ha!.facts as { performanceStandby(): boolean };
    const was = facts.performanceStandby;
    facts.performanceStandby = () => true;
    try {
      const h = await health(standby);
      expect(h.status).toBe(473);
      expect(h.body).toMatchObject({ standby: true, performance_standby: true });
      expect((await health(standby, '?perfstandbyok=true')).status).toBe(200);
      expect((await health(standby, '?performancestandbycode=298')).status).toBe(298);
      // standbyok alone does not answer 200 for a performance standby, as Vault.
      expect((await health(standby, '?standbyok=true')).status).toBe(473);
      const l = (await standby.call('GET', 'sys/leader', undefined, { token: null })).body;
      expect(l).toMatchObject({ is_self: false, performance_standby: true, last_wal: 0 });
      expect(l.performance_standby_last_remote_wal).toBe(Number(standby.node.engine.lastGuard().index));
      // Vault's client, unmodified, reads the same.
      expect(await runHvac('ha_surface.py', standby.apiAddr, 45_000, ['perf'])).toEqual({
        health_status: 473, health_performance_standby: true, health_echo_duration_ms: expect.any(Number), health_custom: 299, head_status: 473,
        leader: { ha_enabled: true, is_self: false, performance_standby: true, last_wal: 0 },
      });
    } finally {
      facts.performanceStandby = was;
    }
    expect((await health(standby)).status).toBe(429);
    expect((await health(standby)).body.performance_standby).toBe(false);
  });
});

describe('sys/leader', () => {
  it('shows last_wal on the active node and 0 on a standby, as Vault', async () => {
    const a = (await active.call('GET', 'sys/leader', undefined, { token: null })).body;
    expect(a.is_self).toBe(true);
    expect(a.last_wal).toBeGreaterThan(0);
    // The standby follows the same database: its own index is not 0, but Vault shows 0.
    await eventually(async () => expect(Number(standby.node.engine.lastGuard().index)).toBeGreaterThan(0), { timeoutMs: 5_000 });
    expect((await standby.call('GET', 'sys/leader', undefined, { token: null })).body).toMatchObject({ is_self: false, performance_standby: false, performance_standby_last_remote_wal: 0, last_wal: 0 });
  });

  it('answers 500 \'Vault is sealed\' on an uninitialised node with HA, as Vault\'s Leader', async () => {
    const fresh: InProcessNode = await h.startNode({ inProcess: true, postgresql: { connectionUrl: await postgres().createDatabase('ha_surface_uninit'), haEnabled: true }, initialize: false });
    const r = await fresh.call('GET', 'sys/leader', undefined, { token: null });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ errors: ['Vault is sealed'] });
  });
});

describe('X-Vault-No-Request-Forwarding on a standby', () => {
  it('relays when the header is empty and redirects for any other value, as Vault tests it', async () => {
    // Over node:http: a 307 is answered to the test, not followed.
    const agent = new http.Agent();
    try {
      const client = vault(standby.apiAddr, standby.rootToken, { agent });
      const relayed = await client.get('secret/data/surface', { headers: { 'X-Vault-No-Request-Forwarding': '' } });
      expect(relayed.status).toBe(200);
      expect(relayed.body.data.data).toEqual({ a: 1 });
      for (const value of ['true', 'false', '1']) {
        const r = await client.get('secret/data/surface', { headers: { 'X-Vault-No-Request-Forwarding': value } });
        expect(r.status).toBe(307);
        expect(r.headers.get('location')).toBe(`${active.apiAddr}/v1/secret/data/surface`);
      }
    } finally {
      agent.destroy();
    }
  });
});

// Last: it seals the standby.
describe('sys/leader on a sealed node', () => {
  it('answers 500 \'Vault is sealed\' as Vault, and health still answers 503', async () => {
    expect((await standby.call('PUT', 'sys/seal')).status).toBe(204);
    const r = await standby.call('GET', 'sys/leader', undefined, { token: null });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ errors: ['Vault is sealed'] });
    expect((await health(standby)).status).toBe(503);
    // hvac raises Vault's 500 with its text.
    expect((await runHvac('ha_surface.py', standby.apiAddr, 45_000, ['sealed'])).leader_error).toContain('Vault is sealed');
  });
});
