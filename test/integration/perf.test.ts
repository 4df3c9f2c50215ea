/**
 * Performance replication end to end on in-process nodes (real LevelDB, HTTP and gRPC mTLS):
 * activation, streaming of the replicated class only, local tokens and local mounts that survive,
 * replicated writes forwarded from the secondary, status fields, promote, disable, update-primary.
 * Activation, streaming and forwarded writes run on LevelDB and on PostgreSQL (forEachEngine,
 * test/support/engines.ts); the mode, token and license rules on LevelDB only.
 */
import { jest } from '@jest/globals';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { drOperationToken, inSync, PERF, replStatus, secondaryToken } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { forEachEngine } from '../support/engines.js';

jest.setTimeout(60_000);

forEachEngine((engine) => {
  // Mode, token and license rules that no storage engine shapes run on LevelDB only.
  const levelDbOnly = (name: string, fn: () => Promise<void>, timeoutMs?: number): void => {
    if (engine === 'leveldb') test(name, fn, timeoutMs);
  };

  describe('performance replication', () => {
    let p: TestNode;
    let s: TestNode;
    beforeEach(async () => {
      [p, s] = await Promise.all([startTestNode(), startTestNode()]);
      expect((await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
      expect((await p.call('PUT', 'secret/data/before', { data: { v: 1 } })).status).toBe(200);
    });
    afterEach(async () => {
      await Promise.all([p.stop(), s.stop()]);
    });

    test('activation streams the replicated class only; tokens stay local; a local mount survives', async () => {
      // s.rootToken becomes a root token generated on the secondary with the primary's shares.
      await joinSecondary(p, s, 'perf-east', 'performance');
      const sp = await replStatus(s, 'performance');
      expect(sp).toMatchObject({ mode: 'secondary', state: 'stream-wals', secondary_id: 'perf-east', connection_state: 'ready' });
      expect(sp.known_primary_cluster_addrs).toEqual([expect.any(String)]);
      expect(typeof sp.last_remote_wal).toBe('number');
      // Replicated data is served locally, read with the secondary's own token.
      expect((await s.call('GET', 'secret/data/before')).body.data.data).toEqual({ v: 1 });
      // The primary's tokens are not valid on the secondary, and the secondary's not on the primary.
      expect((await s.call('GET', 'secret/data/before', undefined, { token: p.rootToken })).status).toBe(403);
      expect((await p.call('GET', 'secret/data/before', undefined, { token: s.rootToken })).status).toBe(403);
      // A local mount on the secondary lives there.
      expect((await s.call('POST', 'sys/mounts/scratch', { type: 'kv', options: { version: '2' }, local: true })).status).toBe(204);
      expect((await s.call('PUT', 'scratch/data/mine', { data: { here: true } })).status).toBe(200);
      // New replicated data streams; the local mount and its data are untouched by it.
      expect((await p.call('PUT', 'secret/data/after', { data: { v: 2 } })).status).toBe(200);
      await inSync(p, s, { kind: 'performance' });
      await eventually(async () => expect((await s.call('GET', 'secret/data/after')).body?.data?.data).toEqual({ v: 2 }));
      expect((await s.call('GET', 'scratch/data/mine')).body.data.data).toEqual({ here: true });
      expect((await p.call('GET', 'scratch/data/mine')).status).toBe(404);
      // Primary status: WIRE.md section 3 fields of a performance primary.
      const pp = await replStatus(p, 'performance');
      expect(pp).toMatchObject({ mode: 'primary', state: 'running', known_secondaries: ['perf-east'], cluster_id: sp.cluster_id });
      expect(pp.last_performance_wal).toBe(pp.last_wal);
      expect(pp.last_dr_wal).toBeUndefined();
      await eventually(async () => {
        const st = await replStatus(p, 'performance');
        expect(st.secondaries).toEqual([expect.objectContaining({ node_id: 'perf-east', connection_status: 'connected', lag_entries: 0 })]);
        expect(typeof st.secondaries[0].last_heartbeat_duration_ms).toBe('string');
      });
      // DR is untouched by performance replication.
      expect((await replStatus(p, 'dr')).mode).toBe('disabled');
      // sys/health: a performance secondary serves (200) and says what it is; so does the primary.
      const hs = await s.call('GET', 'sys/health', undefined, { token: null });
      expect(hs.status).toBe(200);
      expect(hs.body).toMatchObject({ replication_performance_mode: 'secondary', replication_dr_mode: 'disabled' });
      expect((await p.call('GET', 'sys/health', undefined, { token: null })).body.replication_performance_mode).toBe('primary');
    });

    test('replicated writes on a performance secondary are forwarded; a login it cannot forward is refused (503) and changes nothing', async () => {
      // A secret ID with limited uses: a login spends one, a write of replicated data.
      expect((await p.call('POST', 'sys/auth/approle', { type: 'approle' })).status).toBe(204);
      expect((await p.call('POST', 'auth/approle/role/app', { token_policies: 'default' })).status).toBe(204);
      const roleId = (await p.call('GET', 'auth/approle/role/app/role-id')).body.data.role_id;
      const secretId = (await p.call('POST', 'auth/approle/role/app/secret-id', { num_uses: 2 })).body.data.secret_id;
      await joinSecondary(p, s, 'perf-w', 'performance');
      // A write of replicated data through the secondary goes to the primary (see forward.test.ts).
      expect((await s.call('PUT', 'secret/data/before', { data: { v: 'via-s' } })).status).toBe(200);
      expect((await p.call('GET', 'secret/data/before')).body.data.data).toEqual({ v: 'via-s' });
      // A login creates a token local to the node it reaches, so it is never forwarded; spending the
      // secret ID's use would diverge from the primary, so the storage engine's guard refuses it.
      const r = await s.call('POST', 'auth/approle/login', { role_id: roleId, secret_id: secretId }, { token: null });
      expect(r.status).toBe(503);
      expect(r.body.errors[0]).toMatch(/performance secondary/);
      // Nothing was spent: both uses still log in on the primary.
      for (let i = 0; i < 2; i++) expect((await p.call('POST', 'auth/approle/login', { role_id: roleId, secret_id: secretId }, { token: null })).status).toBe(200);
      // Secret IDs managed through the secondary (issue 27): its writes go to the primary, its lookups read what it holds.
      const custom = await s.call('POST', 'auth/approle/role/app/custom-secret-id', { secret_id: 'via-secondary' });
      expect(custom.status).toBe(200);
      const accessor = custom.body.data.secret_id_accessor;
      expect((await p.call('POST', 'auth/approle/role/app/secret-id/lookup', { secret_id: 'via-secondary' })).body.data.secret_id_accessor).toBe(accessor);
      expect((await s.call('POST', 'auth/approle/role/app/secret-id-accessor/lookup', { secret_id_accessor: accessor })).body.data.secret_id_accessor).toBe(accessor);
      expect((await s.call('POST', 'auth/approle/role/app/custom-secret-id', { secret_id: 'via-secondary' })).status).toBe(400);
      expect((await s.call('POST', 'auth/approle/role/app/secret-id-accessor/destroy', { secret_id_accessor: accessor })).status).toBe(204);
      expect((await p.call('POST', 'auth/approle/role/app/secret-id/lookup', { secret_id: 'via-secondary' })).status).toBe(204);
      expect((await s.call('POST', 'auth/approle/role/app/secret-id/lookup', { secret_id: 'via-secondary' })).status).toBe(204);
      // Still in step with the primary: nothing diverged.
      expect((await p.call('PUT', 'secret/data/before', { data: { v: 3 } })).status).toBe(200);
      await inSync(p, s, { kind: 'performance' });
      await eventually(async () => expect((await s.call('GET', 'secret/data/before')).body.data.data).toEqual({ v: 3 }));
    });

    levelDbOnly('a DR token is refused by a performance secondary before it is spent, and the reverse', async () => {
      expect((await p.call('POST', 'sys/replication/dr/primary/enable', {})).status).toBe(204);
      expect((await p.call('POST', `${PERF}/primary/enable`, {})).status).toBe(204);
      const drToken = await secondaryToken(p, 'x1');
      const refused = await s.call('POST', `${PERF}/secondary/enable`, { token: drToken });
      expect(refused.status).toBe(400);
      expect(refused.body.errors[0]).toMatch(/activates DR replication, not performance/);
      expect((await replStatus(s, 'performance')).mode).toBe('disabled');
      // Not spent: the same token still activates a DR secondary.
      expect((await s.call('POST', 'sys/replication/dr/secondary/enable', { token: drToken })).status).toBe(204);
      await inSync(p, s);
      // A DR secondary has no performance role of its own.
      const r = await s.call('GET', `${PERF}/status`, undefined, { token: null });
      expect(r.body.data.mode).toBe('disabled');
    });

    levelDbOnly('promote, demote, update-primary with addresses and with a blank token, disable', async () => {
      await joinSecondary(p, s, 'perf-x', 'performance');
      const clusterId = (await replStatus(p, 'performance')).cluster_id;
      // Demote the primary, promote the secondary (sudo token of its own, no DR operation token).
      expect((await p.call('POST', `${PERF}/primary/demote`, {})).status).toBe(200);
      expect((await s.call('POST', `${PERF}/secondary/promote`, {})).status).toBe(204);
      const promoted = await replStatus(s, 'performance');
      expect(promoted).toMatchObject({ mode: 'primary', cluster_id: clusterId });
      // Replicated writes are accepted on the promoted node.
      expect((await s.call('PUT', 'secret/data/on-new', { data: { v: 1 } })).status).toBe(200);
      // The old primary (demoted, no credentials) cannot follow by address: it needs a token.
      const byAddr = await p.call('POST', `${PERF}/secondary/update-primary`, { update_primary_addrs: [promoted.primary_cluster_addr] });
      expect(byAddr.status).toBe(400);
      const token = await secondaryToken(s, 'old-primary', undefined, 'performance');
      expect((await p.call('POST', `${PERF}/secondary/update-primary`, { token })).status).toBe(204);
      await inSync(s, p, { kind: 'performance' });
      await eventually(async () => expect((await p.call('GET', 'secret/data/on-new')).body?.data?.data).toEqual({ v: 1 }));
      // update_primary_addrs probes in order; a dead address first, then the live one.
      const moved = await p.call('POST', `${PERF}/secondary/update-primary`, { update_primary_addrs: ['127.0.0.1:1', promoted.primary_cluster_addr] });
      expect(moved.status).toBe(204);
      await inSync(s, p, { kind: 'performance' });
      // token and update_primary_addrs together: refused, nothing changed.
      const both = await p.call('POST', `${PERF}/secondary/update-primary`, { token: 'x', update_primary_addrs: ['a:1'] });
      expect(both.status).toBe(400);
      // A blank token forgets the primary, with a warning.
      const blank = await p.call('POST', `${PERF}/secondary/update-primary`, { token: '' });
      expect(blank.status).toBe(200);
      expect(blank.body.warnings[0]).toMatch(/forgot its primary/);
      expect((await replStatus(p, 'performance')).primaries).toEqual([]);
      // Disable (no DR operation token): the node leaves the set and accepts replicated writes again.
      expect((await p.call('POST', `${PERF}/secondary/disable`, {})).status).toBe(204);
      expect((await replStatus(p, 'performance')).mode).toBe('disabled');
      expect((await p.call('PUT', 'secret/data/standalone', { data: { v: 1 } })).status).toBe(200);
    });

    levelDbOnly('secondary operations need a sudo token; the performance license gates the endpoints', async () => {
      await joinSecondary(p, s, 'perf-auth', 'performance');
      expect((await s.call('POST', `${PERF}/secondary/promote`, {}, { token: null })).status).toBe(403);
      expect((await replStatus(s, 'performance')).mode).toBe('secondary');
      const unlicensed = await startTestNode({ license: 'none' });
      try {
        const r = await unlicensed.call('POST', `${PERF}/primary/enable`, {});
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(r.status).toBeLessThan(500);
        expect(r.body.errors[0]).toMatch(/performance-replication/);
      } finally {
        await unlicensed.stop();
      }
    });

    levelDbOnly('a promoted DR secondary takes over the performance set; its secondary follows by address, no new token', async () => {
      const d = await startTestNode();
      try {
        await joinSecondary(p, s, 'perf-follow', 'performance');
        // d: DR secondary of the performance primary p; it holds p's performance role, inert.
        await joinSecondary(p, d, 'dr-standby');
        expect((await replStatus(d, 'performance')).mode).toBe('disabled');
        const opToken = await drOperationToken(d, p.unsealKeys.slice(0, 2));
        await p.stop({ keepDir: true });
        expect((await d.call('POST', 'sys/replication/dr/secondary/promote', { dr_operation_token: opToken })).status).toBe(204);
        const perfOnD = await eventually(async () => {
          const st = await replStatus(d, 'performance');
          expect(st).toMatchObject({ mode: 'primary', known_secondaries: ['perf-follow'] });
          return st;
        });
        const moved = await s.call('POST', `${PERF}/secondary/update-primary`, { update_primary_addrs: [perfOnD.primary_cluster_addr] });
        expect({ status: moved.status, body: moved.body }).toEqual({ status: 204, body: null });
        // d now takes replicated writes (it is the DR primary) and s receives them.
        d.rootToken = p.rootToken;
        expect((await d.call('PUT', 'secret/data/after-failover', { data: { v: 9 } })).status).toBe(200);
        await eventually(async () => expect((await s.call('GET', 'secret/data/after-failover')).body?.data?.data).toEqual({ v: 9 }), { timeoutMs: 15_000 });
      } finally {
        await d.stop();
      }
    });
  });
});
