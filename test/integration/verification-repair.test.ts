/**
 * A secondary whose Merkle root differs from its primary's at the same WAL index repairs itself
 * (issue 17 item 10): continuous verification finds the mismatch, the secondary runs a Merkle diff
 * and sync against its primary, and status and events say so, without operator action. The
 * divergence is real: a replicated key deleted straight from the secondary's LevelDB (data and
 * Merkle index, no WAL entry, guard untouched), as a lost write or a bad disk would leave it.
 * In-process nodes, real gRPC, real LevelDB.
 *
 * A divergence made while the secondary was stopped (its LevelDB altered offline) is found and
 * repaired after the restart the same way.
 *
 * Also (item 13): the diff phase of that second reconcile shows its own progress (nothing yet),
 * not the activation sync's final figures.
 */
import { KINDS } from '../../src/core/replication/index.js';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { roleStatus } from '../../src/replication/status.js';
import { StorageEngine } from '../../src/storage/engine.js';
import { openLevelBackend } from '../../src/storage/leveldb.js';
import type { ReplicationEvent } from '../../src/replication/events.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { replStatus, type Kind } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const KEYS = 40;

/** A primary with a WAL too short to stream the secondary's history (activation is a Merkle sync), and its in-sync secondary. */
async function divergedPair(kind: Kind): Promise<{ p: TestNode; s: TestNode; rawKey: string; events: ReplicationEvent[] }> {
  const p = await startTestNode({ walMaxEntries: 8 });
  expect((await p.call('POST', 'sys/mounts/kv', { type: 'kv' })).status).toBe(204);
  for (let i = 0; i < KEYS; i++) expect((await p.call('PUT', `kv/k${i}`, { v: i })).status).toBe(204);
  const s = await startTestNode();
  await joinSecondary(p, s, 's1', kind);
  // Verified once against the primary's root: the pair is in sync to start with.
  await eventually(async () => expect((await replStatus(s, kind)).last_verified_wal).toBeGreaterThan(0), { timeoutMs: 15_000, intervalMs: 50 });
  const uuid = (await p.call('GET', 'sys/mounts')).body.data['kv/'].uuid as string;
  const rawKey = `logical/${uuid}/k7`;
  expect(await s.node.engine.readRaw(rawKey)).toBeDefined();
  const events: ReplicationEvent[] = [];
  s.node.events.subscribe((e) => {
    if (e.kind === kind) events.push(e);
  });
  // The divergence: gone from the secondary's data and Merkle index, with no WAL entry.
  await s.node.engine.installChunk([{ type: 'del', key: rawKey }]);
  expect(await s.node.engine.readRaw(rawKey)).toBeUndefined();
  return { p, s, rawKey, events };
}

describe.each(KINDS)('%s: a verification mismatch', (kind) => {
  it('is repaired by the secondary itself, by a Merkle diff and sync, and status and events say so', async () => {
    const { p, s, rawKey, events } = await divergedPair(kind);
    const lastWal = async () => (await replStatus(p, kind))[kind === 'dr' ? 'last_dr_wal' : 'last_performance_wal'];
    const repaired = await eventually(async () => {
      const st = await replStatus(s, kind);
      expect(st).toMatchObject({ state: 'stream-wals', verification_mismatch: false });
      expect(st.verification_repairs).toBeGreaterThanOrEqual(1);
      expect(st.last_verified_wal).toBe(await lastWal());
      expect(events.map((e) => e.type)).toContain('verification-restored');
      return st;
    }, { timeoutMs: 20_000, intervalMs: 100 });
    expect(await s.node.engine.readRaw(rawKey)).toEqual(await p.node.engine.readRaw(rawKey));
    expect(repaired.last_verification_repair).not.toBe('');
    // The story in events: found, diffed and synced for that reason, then verified again.
    const types = events.map((e) => e.type);
    const at = (t: string) => types.indexOf(t);
    expect(at('verification-mismatch')).toBeGreaterThanOrEqual(0);
    expect(events.find((e) => e.type === 'merkle-diff-started')).toMatchObject({ reason: 'verification_mismatch' });
    expect(events.find((e) => e.type === 'merkle-sync-finished')).toMatchObject({ reason: 'verification_mismatch', fetched_keys: 1 });
    expect(events.find((e) => e.type === 'verification-restored')).toMatchObject({ repaired_by_merkle_sync: true, repairs: 1 });
    expect(at('verification-mismatch')).toBeLessThan(at('merkle-diff-started'));
    expect(at('merkle-sync-finished')).toBeLessThan(at('verification-restored'));
    // And it keeps streaming what the primary writes next.
    expect((await p.call('PUT', 'kv/after', { v: 'x' })).status).toBe(204);
    await eventually(async () => expect((await replStatus(s, kind)).last_verified_wal).toBe(await lastWal()), { timeoutMs: 15_000, intervalMs: 50 });
    expect((await replStatus(s, kind)).verification_mismatch).toBe(false);
  }, 60_000);
});

it('the diff phase of a new reconcile shows its own progress, not the previous sync\'s (issue 17 item 13)', async () => {
  const { s } = await divergedPair('dr');
  // Read the way status reads it, in the very tick the diff phase starts.
  let during: Record<string, unknown> | undefined;
  let last: Record<string, unknown> | undefined;
  s.node.events.subscribe((e) => {
    if (e.kind === 'dr' && e.type === 'merkle-diff-started') during = roleStatus(s.node.dr, s.node.engine.lastGuard().index, Date.now());
    if (e.kind === 'dr' && e.type === 'merkle-sync-finished') last = roleStatus(s.node.dr, s.node.engine.lastGuard().index, Date.now());
  });
  await eventually(async () => expect(last).toBeDefined(), { timeoutMs: 20_000, intervalMs: 50 });
  expect(during).toMatchObject({ state: 'merkle-diff', merkle_sync_progress: { sync_total_keys: 0, sync_progress: 0 } });
  // The activation sync before it moved every key; this one moves the one that differs.
  expect(last).toMatchObject({ last_merkle_sync: { fetched_keys: 1, deleted_keys: 0 } });
}, 60_000);

it('dr: a divergence made while the secondary was stopped is repaired after its restart', async () => {
  const p = await startTestNode({ walMaxEntries: 8 });
  expect((await p.call('POST', 'sys/mounts/kv', { type: 'kv' })).status).toBe(204);
  for (let i = 0; i < 10; i++) expect((await p.call('PUT', `kv/k${i}`, { v: i })).status).toBe(204);
  const s = await startTestNode();
  await joinSecondary(p, s, 's1');
  await eventually(async () => expect((await replStatus(s, 'dr')).last_verified_wal).toBeGreaterThan(0), { timeoutMs: 15_000, intervalMs: 50 });
  const uuid = (await p.call('GET', 'sys/mounts')).body.data['kv/'].uuid as string;
  const rawKey = `logical/${uuid}/k3`;
  await s.stop({ keepDir: true });

  // Offline: the key goes from the secondary's LevelDB (data and Merkle index), its guard unchanged.
  const backend = await openLevelBackend({ path: join(s.dataDir, 'data') });
  const engine = await StorageEngine.open(backend, { walMaxEntries: 10_000, walMaxBytes: 64 * 1024 * 1024 });
  await engine.installChunk([{ type: 'del', key: rawKey }]);
  await engine.close();
  await backend.close();

  const again = await startTestNode({ dir: s.dataDir, initialize: false });
  try {
    const events: ReplicationEvent[] = [];
    again.node.events.subscribe((e) => void (e.kind === 'dr' && events.push(e)));
    for (const key of p.unsealKeys.slice(0, 2)) await again.call('PUT', 'sys/unseal', { key }, { token: null });
    await eventually(async () => {
      const st = await replStatus(again, 'dr');
      expect(st).toMatchObject({ state: 'stream-wals', verification_mismatch: false, verification_repairs: 1 });
      expect(st.last_verified_wal).toBe((await replStatus(p, 'dr')).last_dr_wal);
    }, { timeoutMs: 20_000, intervalMs: 100 });
    expect(await again.node.engine.readRaw(rawKey)).toEqual(await p.node.engine.readRaw(rawKey));
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['verification-mismatch', 'merkle-sync-finished', 'verification-restored']));
  } finally {
    await again.stop();
    await rm(s.dataDir, { recursive: true, force: true });
  }
}, 60_000);
