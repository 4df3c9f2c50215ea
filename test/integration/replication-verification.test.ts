/**
 * Continuous verification on in-process nodes with real gRPC: the primary's heartbeats carry its
 * Merkle root at its last WAL index, and a secondary that has applied that index compares its own.
 * Status shows `last_verified_wal` advancing with writes; a secondary whose storage was changed
 * behind replication's back (a key written straight into its engine) reports the mismatch in
 * status and as an event, repairs it by a Merkle sync, and says so (events, status, metrics).
 */
import { KINDS } from '../../src/core/replication/index.js';
import { roleStatus } from '../../src/replication/status.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { inSync, PERF, replStatus, type Kind } from '../support/dr.js';
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

async function writePolicy(p: TestNode, name: string): Promise<void> {
  const r = await p.call('PUT', `sys/policies/acl/${name}`, { policy: `path "secret/${name}" { capabilities = ["read"] }` });
  expect(r.status).toBe(204);
}

/** Waits until `s` has verified `p`'s current last index; returns s's status. */
async function verifiedAt(p: TestNode, s: TestNode, kind: Kind): Promise<any> {
  return eventually(async () => {
    const last = (await replStatus(p, kind)).last_wal as number;
    const st = await replStatus(s, kind);
    expect(st.verification_mismatch).toBe(false);
    expect(st.last_verified_wal).toBe(last);
    return st;
  }, { timeoutMs: 15_000 });
}

it.each(KINDS)('%s: last_verified_wal follows the primary\'s writes, with no mismatch', async (kind) => {
  const p = await node();
  const s = await node();
  await joinSecondary(p, s, 'east', kind);
  const first = await verifiedAt(p, s, kind);
  expect(first.last_verified_wal).toBeGreaterThan(0);
  expect(new Date(first.last_verified_at).toISOString()).toBe(first.last_verified_at);

  for (let i = 0; i < 5; i++) await writePolicy(p, `pol-${i}`);
  const after = await verifiedAt(p, s, kind);
  expect(after.last_verified_wal).toBeGreaterThanOrEqual(first.last_verified_wal + 5);
  expect(after.verification_mismatch_wal).toBeUndefined();
});

it('dr: verification advances under a steady write load too (the primary never idles for a heartbeat)', async () => {
  const p = await node();
  const s = await node();
  await joinSecondary(p, s, 'east');
  const start = (await verifiedAt(p, s, 'dr')).last_verified_wal as number;
  let writing = true;
  let written = 0;
  const writer = (async () => {
    while (writing) await writePolicy(p, `load-${written++}`);
  })();
  try {
    // Verified past where the load began while it still runs.
    await eventually(async () => {
      const st = await replStatus(s, 'dr');
      expect(st.verification_mismatch).toBe(false);
      expect(st.last_verified_wal).toBeGreaterThan(start + 5);
    }, { timeoutMs: 15_000, intervalMs: 200 });
  } finally {
    writing = false;
    await writer;
  }
  expect(written).toBeGreaterThan(5);
});

it('dr: a secondary altered behind replication\'s back reports the mismatch in status and as an event, repairs it by a Merkle sync, and metrics count the repair', async () => {
  const p = await node();
  const s = await node();
  await joinSecondary(p, s, 'east');
  await writePolicy(p, 'before');
  const before = await verifiedAt(p, s, 'dr');
  // Status as it reads the moment the mismatch is found (the repair follows at once).
  let found: Record<string, unknown> | undefined;
  s.node.events.subscribe((e) => {
    if (e.kind === 'dr' && e.type === 'verification-mismatch') found = roleStatus(s.node.dr, s.node.engine.lastGuard().index, Date.now());
  });

  // Behind replication's back: a replicated-class key straight into the secondary's engine (no
  // WAL entry, so its index stays the primary's while its root no longer is).
  const stray = { type: 'put' as const, key: 'sys/policy/stray-written-by-test', value: Buffer.from('not from the primary') };
  const strayRoot = (await s.node.engine.installChunk([stray]), s.node.engine.merkleRoot().toString('hex'));

  await eventually(async () => expect(found).toBeDefined(), { timeoutMs: 15_000 });
  expect(found).toMatchObject({ verification_mismatch: true, verification_mismatch_wal: before.last_verified_wal, last_verified_wal: before.last_verified_wal });

  // As an event (once, not per heartbeat), with both roots and no secret.
  const events = s.node.events.history().filter((e) => e.type === 'verification-mismatch');
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ kind: 'dr', wal: before.last_verified_wal, local_root: strayRoot });
  expect(events[0]?.primary_root).toBe(p.node.engine.merkleRoot().toString('hex'));
  // Over HTTP too (a DR secondary answers the events endpoint; its token store is the primary's).
  const json = await s.call('GET', 'sys/replication/events?format=json', undefined, { token: p.rootToken });
  expect(json.status).toBe(200);
  expect(json.body.data.events.map((e: { type: string }) => e.type)).toContain('verification-mismatch');

  // Repaired by the secondary itself (issue 17 item 10): the stray key is gone, the roots match.
  const after = await verifiedAt(p, s, 'dr');
  expect(after.verification_repairs).toBe(1);
  expect(await s.node.engine.readRaw(stray.key)).toBeUndefined();
  expect(s.node.events.history().map((e) => e.type)).toContain('verification-restored');

  // As metrics: no mismatch now, one repair, and the index verified last.
  const metrics = await s.call('GET', 'sys/metrics?format=prometheus', undefined, { token: p.rootToken });
  expect(metrics.status).toBe(200);
  const text = typeof metrics.body === 'string' ? metrics.body : JSON.stringify(metrics.body);
  expect(text).toMatch(/tessera_replication_verification_mismatch\{kind="dr"\} 0/);
  expect(text).toMatch(/tessera_replication_verification_repairs\{kind="dr"\} 1/);
  expect(text).toMatch(new RegExp(`tessera_replication_last_verified_wal\\{kind="dr"\\} ${after.last_verified_wal}\\b`));
});

it('performance with a paths filter: verified against the root of the keys its filter allows', async () => {
  const p = await node();
  const s = await node();
  const kv2 = { type: 'kv', options: { version: '2' } };
  expect((await p.call('POST', 'sys/mounts/secret', kv2)).status).toBe(204);
  expect((await p.call('POST', 'sys/namespaces/team-a')).status).toBe(200);
  expect((await p.call('POST', 'team-a/sys/mounts/kv', kv2)).status).toBe(204);
  expect((await p.call('PUT', 'secret/data/root-one', { data: { v: 1 } })).status).toBe(200);
  expect((await p.call('PUT', 'team-a/kv/data/a-one', { data: { v: 'a' } })).status).toBe(200);
  await joinSecondary(p, s, 'east', 'performance');
  expect((await p.call('POST', `${PERF}/primary/paths-filter/east`, { mode: 'deny', paths: ['team-a'] })).status).toBe(204);
  await inSync(p, s, { kind: 'performance' });
  // The secondary holds less than the primary's replicated tree: only a filtered root can match.
  expect(s.node.engine.subtreeRoot(1).equals(p.node.engine.subtreeRoot(1))).toBe(false);
  const st = await verifiedAt(p, s, 'performance');
  expect(st.last_verified_wal).toBeGreaterThan(0);
  expect(s.node.events.history().map((e) => e.type)).not.toContain('verification-mismatch');

  // The filter change and the reconcile it caused are events too (issue item 7), keys moved included.
  const onP = p.node.events.history().filter((e) => e.type === 'primary/paths-filter/write');
  expect(onP.at(-1)).toMatchObject({ kind: 'performance', outcome: 'ok', secondary_id: 'east', mode: 'deny', paths: 1 });
  const sync = s.node.events.history().filter((e) => e.kind === 'performance' && /^merkle-/.test(e.type)).map((e) => e.type);
  expect(sync.lastIndexOf('merkle-diff-started')).toBeGreaterThanOrEqual(0);
  expect(sync.lastIndexOf('merkle-sync-finished')).toBeGreaterThan(sync.lastIndexOf('merkle-diff-started'));
  expect(sync).not.toContain('merkle-sync-failed');
  const finished = s.node.events.history().filter((e) => e.type === 'merkle-sync-finished').at(-1);
  expect(finished).toMatchObject({ kind: 'performance', fetched_keys: 0 });
  expect(finished?.keys_moved).toBe(finished?.deleted_keys);
  expect(finished?.keys_moved as number).toBeGreaterThan(0);
});
