/**
 * DR operations beyond the happy path, on in-process nodes with real gRPC: sealed-box
 * activation, mode errors, DR-secondary maintenance with an operation token, token deletion,
 * update-primary forms, demote and rejoin by token, and the version handshake.
 */
import { VERSION } from '../../src/core/version.js';
import { PrimaryStreamer } from '../../src/replication/primary-service.js';
import { StorageEngine } from '../../src/storage/engine.js';
import { MemoryBackend } from '../../src/storage/memory.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, drOperationToken as opToken, drStatus as status, inSync } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const nodes: TestNode[] = [];
async function node(): Promise<TestNode> {
  const n = await startTestNode();
  nodes.push(n);
  return n;
}
afterEach(async () => {
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

it('activates with a token sealed to the secondary public key, without calling the primary API', async () => {
  const p = await node();
  const s = await node();
  await p.call('POST', `${DR}/primary/enable`, {});
  const pub = await s.call('POST', `${DR}/secondary/generate-public-key`, {});
  expect(pub.body.data.secondary_public_key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
  const tok = await p.call('POST', `${DR}/primary/secondary-token`, { id: 'sealed-1', secondary_public_key: pub.body.data.secondary_public_key, ttl: '10m' });
  expect(tok.body.wrap_info).toBeNull();
  // Point primary_api_addr at nothing: activation must not need the API.
  const en = await s.call('POST', `${DR}/secondary/enable`, { token: tok.body.data.token, primary_api_addr: 'http://127.0.0.1:1' });
  expect(en.status).toBe(204);
  await inSync(p, s);
  // A second cluster cannot open it.
  const other = await node();
  await other.call('POST', `${DR}/secondary/generate-public-key`, {});
  const r = await other.call('POST', `${DR}/secondary/enable`, { token: tok.body.data.token });
  expect(r.status).toBe(400);
  expect((await status(other)).mode).toBe('disabled');
});

it('answers calls from the wrong mode with a 400 naming the mode and what is allowed', async () => {
  const p = await node();
  const r = await p.call('POST', `${DR}/primary/demote`, {});
  expect(r.status).toBe(400);
  expect(r.body.errors[0]).toMatch(/DR replication disabled/);
  expect(r.body.errors[0]).toMatch(/primary\/enable/);
  await p.call('POST', `${DR}/primary/enable`, {});
  const again = await p.call('POST', `${DR}/primary/enable`, {});
  expect(again.status).toBe(400);
  expect(again.body.errors[0]).toMatch(/DR primary/);
  const revoke = await p.call('POST', `${DR}/primary/revoke-secondary`, { id: 'never-issued' });
  expect(revoke.status).toBe(400);
  expect((await p.call('POST', `${DR}/primary/secondary-token`, {})).status).toBe(400);
  // A disable then enable makes a new cluster id.
  const id1 = (await status(p)).cluster_id;
  expect((await p.call('POST', `${DR}/primary/disable`, {})).status).toBe(204);
  await p.call('POST', `${DR}/primary/enable`, {});
  expect((await status(p)).cluster_id).not.toBe(id1);
});

it('runs maintenance on a DR secondary with a DR operation token, and deletes the token', async () => {
  const p = await node();
  const s = await node();
  await joinSecondary(p, s, 's');
  const t = await opToken(s, p.unsealKeys.slice(0, 2));
  const check = await s.call('POST', `${DR}/secondary/merkle-check`, { dr_operation_token: t }, { token: null });
  expect(check.status).toBe(200);
  expect(check.body.data.merkle_corruption_report.corrupted_root).toBe(false);
  expect((await s.call('POST', `${DR}/secondary/reindex`, { dr_operation_token: t }, { token: null })).status).toBe(200);
  expect(Number((await status(s)).last_reindex_epoch)).toBeGreaterThan(0);
  expect((await s.call('POST', `${DR}/secondary/merkle-check`, {}, { token: null })).status).toBe(400);
  expect((await s.call('POST', `${DR}/secondary/operation-token/delete`, { dr_operation_token: t }, { token: null })).status).toBe(204);
  expect((await s.call('POST', `${DR}/secondary/merkle-check`, { dr_operation_token: t }, { token: null })).status).toBe(403);
});

it('update-primary: refuses token with addrs, forgets with a blank token, reattaches by address', async () => {
  const p = await node();
  const s = await node();
  await joinSecondary(p, s, 's');
  const t = await opToken(s, p.unsealKeys.slice(0, 2));
  const primaryCluster = (await status(p)).primary_cluster_addr as string;

  const both = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: t, token: 'x', update_primary_addrs: [primaryCluster] }, { token: null });
  expect(both.status).toBe(400);
  expect(both.body.errors[0]).toMatch(/mutually exclusive/);

  await p.call('POST', 'sys/mounts/kv', { type: 'kv' });
  const unreachable = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: t, update_primary_addrs: ['127.0.0.1:1'] }, { token: null });
  expect(unreachable.status).toBe(400);
  expect(unreachable.body.errors[0]).toMatch(/none of the update_primary_addrs answered/);
  // Probed one at a time, in order: the dead address first, then the primary.
  const ok = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: t, update_primary_addrs: ['127.0.0.1:1', primaryCluster] }, { token: null });
  expect(ok.status).toBe(204);
  await inSync(p, s);
  expect((await status(s)).primary_cluster_addr).toBe(primaryCluster);

  // A blank token forgets the primary (and its credentials): only a token can attach it again.
  // Vault-compatible, but never silent: the answer warns, naming the set and the address forgotten.
  const clusterId = (await status(s)).cluster_id;
  const forgot = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: t, token: '' }, { token: null });
  expect(forgot.status).toBe(200);
  expect(forgot.body.warnings).toHaveLength(1);
  expect(forgot.body.warnings[0]).toContain(`cluster address ${primaryCluster}`);
  expect(forgot.body.warnings[0]).toContain(`replication set ${clusterId}`);
  expect(forgot.body.warnings[0]).toContain(p.apiAddr);
  expect(await status(s)).toMatchObject({ mode: 'secondary', primary_cluster_addr: '', state: 'idle' });
  await p.call('PUT', 'kv/while-forgotten', { v: 1 });
  const noCreds = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: t, update_primary_addrs: [primaryCluster] }, { token: null });
  expect(noCreds.status).toBe(400);
  const tok2 = (await p.call('POST', `${DR}/primary/secondary-token`, { id: 's2' })).body.wrap_info.token;
  expect((await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: t, token: tok2 }, { token: null })).status).toBe(204);
  await inSync(p, s);
});

it('demotes a primary that rejoins by token without a wipe, and refuses addresses for it', async () => {
  const a = await node();
  const b = await node();
  await a.call('POST', 'sys/mounts/kv', { type: 'kv' });
  await a.call('PUT', 'kv/shared', { v: 1 });
  await joinSecondary(a, b, 'b');

  // Failover: B promoted (A still up, as after a partition), A demoted.
  const tb = await opToken(b, a.unsealKeys.slice(0, 2));
  expect((await b.call('POST', `${DR}/secondary/promote`, { dr_operation_token: tb, force: true }, { token: null })).status).toBe(204);
  expect((await a.call('PUT', 'kv/lost-on-a', { v: 'never replicated' })).status).toBe(204);
  const onB = await b.call('PUT', 'kv/new-on-b', { v: 2 }, { token: a.rootToken });
  expect(onB.text).toBe('');
  expect(onB.status).toBe(204);
  const demoted = await a.call('POST', `${DR}/primary/demote`, {});
  expect(demoted.status).toBe(200);
  // B left by promotion: nobody confirmed A's last index, and the answer says so.
  expect(demoted.body.data).toMatchObject({ confirmed: [], unconfirmed: [{ id: 'b' }], timed_out: false });
  expect(demoted.body.warnings[0]).toMatch(/did not confirm the last WAL index/);
  expect((await status(a))).toMatchObject({ mode: 'secondary', cluster_id: (await status(b)).cluster_id });

  const ta = await opToken(a, a.unsealKeys.slice(0, 2));
  const bCluster = (await status(b)).primary_cluster_addr;
  const byAddr = await a.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: ta, update_primary_addrs: [bCluster] }, { token: null });
  expect(byAddr.status).toBe(400);
  expect(byAddr.body.errors[0]).toMatch(/token/);

  const tokB = (await b.call('POST', `${DR}/primary/secondary-token`, { id: 'a' }, { token: a.rootToken })).body.wrap_info.token;
  expect((await a.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: ta, token: tokB }, { token: null })).status).toBe(204);
  // Streaming, not only equal: the WAL and root match as soon as the sync installs, before its figures are kept.
  await inSync(b, a, { streaming: true });
  const sa = await status(a);
  expect(sa.last_merkle_sync.fetched_keys).toBeGreaterThan(0);
  expect(sa.last_merkle_sync.deleted_keys).toBeGreaterThan(0);
  // Beside it, the payload that reconcile received (hashes, leaves, values): more than the hashes alone.
  expect(sa.last_merkle_sync_bytes).toBeGreaterThan(2 * 256 * 32);
  await b.call('PUT', 'kv/after-rejoin', { v: 3 }, { token: a.rootToken });
  await inSync(b, a);
  expect((await status(a)).state).toBe('stream-wals');
});

it('refuses a secondary older than its primary, telling it to upgrade the secondary first', async () => {
  const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 10, walMaxBytes: 1 << 20 });
  const svc = new PrimaryStreamer({
    engine, kind: 'dr', registry: { check: () => 'active' as const },
    info: { clusterId: () => 'c', nodeId: () => 'n', apiAddr: () => '', clusterAddr: () => '' },
  });
  const peer = { secondaryId: 's', fingerprint: 'f', address: 'a' };
  const req = { secondaryId: 's', kind: 'dr' as const, apiAddr: '', clusterAddr: '' };
  await expect(svc.bootstrap(peer, { ...req, version: '0.9.0' })).rejects.toThrow(/upgrade the secondary first/);
  await expect(svc.bootstrap(peer, { ...req, version: VERSION })).resolves.toMatchObject({ clusterId: 'c' });
  await expect(svc.bootstrap(peer, { ...req, version: '99.0.0' })).resolves.toMatchObject({ clusterId: 'c' });
  await svc.close();
});
