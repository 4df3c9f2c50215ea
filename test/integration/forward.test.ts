/**
 * Write forwarding from a performance secondary to its primary, on in-process nodes (real LevelDB,
 * HTTP and gRPC mTLS): writes of replicated paths go to the primary and are readable on the
 * secondary as soon as it answers; local mounts and tokens stay local; the secondary's own tokens
 * authorize, and the primary never sees them; a dead primary gives a clear 503 and no write.
 */
import { jest } from '@jest/globals';
import { clusterHostPort } from '../../src/core/cluster-addr.js';
import { connectPrimary } from '../../src/transport/grpc/index.js';
import { generateRoot } from '../harness/dr.js';
import { joinSecondary } from '../harness/cluster.js';
import { inSync, PERF, replStatus, secondaryToken } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

jest.setTimeout(60_000);

const KV2 = { type: 'kv', options: { version: '2' } };

describe('performance secondary write forwarding', () => {
  let p: TestNode;
  let s: TestNode;
  let pStopped = false;
  beforeEach(async () => {
    [p, s] = await Promise.all([startTestNode(), startTestNode()]);
    expect((await p.call('POST', 'sys/mounts/secret', KV2)).status).toBe(204);
    expect((await p.call('PUT', 'secret/data/before', { data: { v: 1 } })).status).toBe(200);
    await joinSecondary(p, s, 'perf-fwd', 'performance');
  });
  afterEach(async () => {
    await Promise.all([pStopped ? undefined : p.stop(), s.stop()]);
    pStopped = false;
  });

  test('a KV write through the secondary is acknowledged by the primary and readable on the secondary at once', async () => {
    const w = await s.call('PUT', 'secret/data/fwd', { data: { v: 'through-s' } });
    expect(w.status).toBe(200);
    // The primary's KV reply (version metadata), with no warning: the secondary applied it first.
    expect(w.body.data).toMatchObject({ version: 1 });
    expect(w.body.warnings).toBeNull();
    // Read-your-writes on the secondary, right after the answer (no polling).
    expect((await s.call('GET', 'secret/data/fwd')).body.data.data).toEqual({ v: 'through-s' });
    expect((await p.call('GET', 'secret/data/fwd')).body.data.data).toEqual({ v: 'through-s' });
    // A second version and a delete go the same way.
    expect((await s.call('PUT', 'secret/data/fwd', { data: { v: 2 } })).body.data.version).toBe(2);
    expect((await s.call('DELETE', 'secret/metadata/fwd')).status).toBe(204);
    expect((await s.call('GET', 'secret/data/fwd')).status).toBe(404);
    expect((await p.call('GET', 'secret/data/fwd')).status).toBe(404);
  });

  test('policy, mount and auth method configuration writes are forwarded and visible on the secondary at once', async () => {
    const policy = 'path "secret/data/app/*" { capabilities = ["create", "update", "read"] }';
    expect((await s.call('PUT', 'sys/policies/acl/app', { policy })).status).toBe(204);
    expect((await s.call('GET', 'sys/policies/acl/app')).body.data.policy).toBe(policy);
    expect((await p.call('GET', 'sys/policies/acl/app')).body.data.policy).toBe(policy);
    // A non-local mount enabled through the secondary lives on the primary, and serves here at once.
    expect((await s.call('POST', 'sys/mounts/shared', KV2)).status).toBe(204);
    expect((await p.call('GET', 'sys/mounts')).body.data['shared/']).toMatchObject({ type: 'kv', local: false });
    expect((await s.call('PUT', 'shared/data/x', { data: { y: 1 } })).status).toBe(200);
    expect((await p.call('GET', 'shared/data/x')).body.data.data).toEqual({ y: 1 });
    // Auth method configuration replicates: enabled and configured through the secondary.
    expect((await s.call('POST', 'sys/auth/userpass', { type: 'userpass' })).status).toBe(204);
    expect((await s.call('POST', 'auth/userpass/users/alice', { password: 'pw-alice', policies: 'app' })).status).toBe(204);
    expect((await p.call('GET', 'auth/userpass/users/alice')).body.data.policies).toEqual(['app']);
    // A login on the secondary makes a token local to it, which then writes through it.
    const login = await s.call('POST', 'auth/userpass/login/alice', { password: 'pw-alice' }, { token: null });
    expect(login.status).toBe(200);
    const alice = login.body.auth.client_token as string;
    expect((await s.call('PUT', 'secret/data/app/one', { data: { by: 'alice' } }, { token: alice })).status).toBe(200);
    expect((await p.call('GET', 'secret/data/app/one')).body.data.data).toEqual({ by: 'alice' });
    // The primary never knew that token.
    expect((await p.call('GET', 'secret/data/app/one', undefined, { token: alice })).status).toBe(403);
  });

  test('a local mount write stays local; a secondary token authorizes forwarding and the primary never needs it', async () => {
    expect((await s.call('POST', 'sys/mounts/scratch', { ...KV2, local: true })).status).toBe(204);
    expect((await s.call('PUT', 'scratch/data/mine', { data: { here: true } })).status).toBe(200);
    expect((await s.call('GET', 'scratch/data/mine')).body.data.data).toEqual({ here: true });
    expect((await p.call('GET', 'scratch/data/mine')).status).toBe(404);
    expect((await p.call('GET', 'sys/mounts')).body.data['scratch/']).toBeUndefined();
    // A token created on the secondary (local) with the root policy: forwarded writes work with it.
    const created = await s.call('POST', 'auth/token/create', { policies: ['root'] });
    expect(created.status).toBe(200);
    const local = created.body.auth.client_token as string;
    expect((await s.call('PUT', 'secret/data/by-local', { data: { ok: 1 } }, { token: local })).status).toBe(200);
    expect((await p.call('GET', 'secret/data/by-local')).body.data.data).toEqual({ ok: 1 });
    expect((await p.call('GET', 'secret/data/by-local', undefined, { token: local })).status).toBe(403);
    expect((await p.call('POST', 'auth/token/lookup', { token: local })).status).toBeGreaterThanOrEqual(400);
  });

  test('a write refused by ACL on the secondary is never forwarded and spends nothing', async () => {
    expect((await s.call('PUT', 'sys/policies/acl/reader', { policy: 'path "secret/*" { capabilities = ["read"] }' })).status).toBe(204);
    const created = await s.call('POST', 'auth/token/create', { policies: ['reader'], num_uses: 3 });
    const reader = created.body.auth.client_token as string;
    const refused = await s.call('PUT', 'secret/data/before', { data: { v: 'nope' } }, { token: reader });
    expect(refused.status).toBe(403);
    expect((await p.call('GET', 'secret/data/before')).body.data).toMatchObject({ data: { v: 1 }, metadata: { version: 1 } });
    const looked = await s.call('POST', 'auth/token/lookup', { token: reader });
    expect(looked.body.data.num_uses).toBe(3);
  });

  test('with the primary down a forwarded write answers 503 naming it, and nothing is written', async () => {
    await p.stop();
    pStopped = true;
    const r = await s.call('PUT', 'secret/data/before', { data: { v: 'lost' } });
    expect(r.status).toBe(503);
    expect(r.body.errors[0]).toMatch(/primary .* is unreachable.*nothing was written/);
    expect((await s.call('GET', 'secret/data/before')).body.data.data).toEqual({ v: 1 });
    const policy = await s.call('PUT', 'sys/policies/acl/late', { policy: 'path "x" { capabilities = ["read"] }' });
    expect(policy.status).toBe(503);
    expect((await s.call('GET', 'sys/policies/acl/late')).status).toBe(404);
    // Local writes do not need the primary.
    expect((await s.call('POST', 'sys/mounts/offline', { ...KV2, local: true })).status).toBe(204);
    expect((await s.call('PUT', 'offline/data/k', { data: { v: 1 } })).status).toBe(200);
  });

  test('the primary runs only token-authorized namespace writes for a secondary: never logins, node routes or reads', async () => {
    // The secondary's own certificate, as its forwarder presents it.
    const m = s.node.performance.material.secondary!;
    const client = connectPrimary({ address: clusterHostPort((await replStatus(p, 'performance')).primary_cluster_addr)!, tls: { caPem: m.caPem, certPem: m.certPem, keyPem: m.keyPem, serverName: m.serverName } });
    const fwd = (method: string, operation: string, path: string, body: Record<string, unknown> = {}) =>
      client.forward('perf-fwd', { requestId: 'r', method, operation, namespace: '', path, trailingSlash: false, query: {}, body });
    try {
      for (const [method, operation, path] of [
        ['POST', 'update', 'auth/token/create-orphan'],
        ['POST', 'update', 'auth/token/revoke'],
        ['POST', 'update', 'sys/seal'],
        ['POST', 'update', 'sys/replication/performance/primary/disable'],
        ['POST', 'update', 'sys/wrapping/unwrap'],
      ] as const) {
        const r = await fwd(method, operation, path, path === 'auth/token/revoke' ? { token: p.rootToken } : {});
        expect({ path, kind: r.kind, status: r.status, errors: r.body.errors }).toEqual({ path, kind: 'error', status: 403, errors: [expect.stringMatching(/not executed for a forwarding secondary/)] });
      }
      const read = await fwd('GET', 'read', 'secret/data/before');
      expect({ kind: read.kind, status: read.status }).toEqual({ kind: 'error', status: 400 });
      expect((await replStatus(p, 'performance')).mode).toBe('primary');
      expect((await p.call('GET', 'sys/seal-status', undefined, { token: null })).body.sealed).toBe(false);
      expect((await p.call('GET', 'auth/token/lookup-self')).status).toBe(200);
      // What a token would authorize runs: a KV write, answered with the index to wait for.
      const ok = await fwd('PUT', 'update', 'secret/data/direct', { data: { v: 1 } });
      expect(ok).toMatchObject({ kind: 'envelope', status: 200 });
      expect(ok.commitIndex).toBe(BigInt((await replStatus(p, 'performance')).last_wal));
    } finally {
      client.close();
    }
  });

  test('when the secondary does not apply the write within the bound, it answers with a warning saying so', async () => {
    const slow = await startTestNode({ forwardWaitMs: 300 });
    try {
      // p is already a performance primary (beforeEach): a second secondary joins it.
      expect((await slow.call('POST', `${PERF}/secondary/enable`, { token: await secondaryToken(p, 'perf-slow', undefined, 'performance') })).status).toBe(204);
      await inSync(p, slow, { kind: 'performance' });
      // The enabling token does not survive the activation: root there from the primary's shares.
      slow.rootToken = await generateRoot(slow.apiAddr, p.unsealKeys);
      // The secondary stops following its primary's stream (as if partitioned from it): forwarded
      // writes still reach the primary, but cannot be applied here.
      await slow.node.performance.secondaryLoop!.stop();
      const started = Date.now();
      const w = await slow.call('PUT', 'secret/data/slow', { data: { v: 1 } });
      expect(w.status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
      expect(w.body.warnings).toEqual([expect.stringMatching(/applied on the primary \(WAL index \d+\) but this performance secondary had not received it within 300 ms/)]);
      expect((await p.call('GET', 'secret/data/slow')).body.data.data).toEqual({ v: 1 });
      expect((await slow.call('GET', 'secret/data/slow')).status).toBe(404);
      // A 204 of the primary (a policy write) becomes a 200 carrying the warning, as in Vault.
      const pol = await slow.call('PUT', 'sys/policies/acl/slow', { policy: 'path "x" { capabilities = ["read"] }' });
      expect(pol.status).toBe(200);
      expect(pol.body.warnings[0]).toMatch(/had not received it within 300 ms/);
    } finally {
      await slow.stop();
    }
  });
});

describe('forwarded writes and the primary\'s DR secondaries', () => {
  test('a forwarded write is answered only once the connected DR secondary holds it', async () => {
    const [p, s, d] = await Promise.all([startTestNode(), startTestNode(), startTestNode()]);
    try {
      expect((await p.call('POST', 'sys/mounts/secret', KV2)).status).toBe(204);
      await joinSecondary(p, s, 'perf-fwd', 'performance');
      await joinSecondary(p, d, 'dr-fwd', 'dr');
      await inSync(p, d, { streaming: true });
      // The DR secondary applies slowly: each apply waits 400 ms before it starts.
      const engine = d.node.engine;
      const apply = engine.applyEntries.bind(engine);
      engine.applyEntries = async (...args: Parameters<typeof apply>) => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        return apply(...args);
      };
      const w = await s.call('PUT', 'secret/data/fwd-dr', { data: { v: 'held by dr' } });
      expect(w.status).toBe(200);
      // At the answer, the DR secondary already holds every index the primary had committed.
      expect(d.node.engine.lastGuard().index).toBeGreaterThanOrEqual(p.node.engine.lastGuard().index);
    } finally {
      await Promise.all([p.stop(), s.stop(), d.stop()]);
    }
  });
});
