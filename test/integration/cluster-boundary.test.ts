/**
 * The cluster port as an attacker holding a valid secondary certificate sees it: real gRPC over
 * mTLS on 127.0.0.1 against an in-process DR primary. It may read only what its kind replicates
 * (never node class: the DR CA's private key, the server key, the JWT signing key), only after its
 * bootstrap, and a revoked id cannot even probe the primary by address. A performance secondary
 * with a paths filter reads nothing of a mount its filter denies, whatever it asks for.
 */
import { VERSION } from '../../src/core/version.js';
import { genesisGuard, type WalEntry } from '../../src/core/wal.js';
import { generateBoxKeyPair, openSealed } from '../../src/replication/activation-token.js';
import { RECORD_KEY } from '../../src/replication/role-record.js';
import { MAX_OPEN_SNAPSHOTS, PrimaryStreamer } from '../../src/replication/primary-service.js';
import { servePolicy } from '../../src/replication/serve-policy.js';
import type { PrimaryClient, StreamMessage } from '../../src/replication/transport.js';
import { StorageEngine } from '../../src/storage/engine.js';
import { eventually } from '../harness/eventually.js';
import { MemoryBackend } from '../../src/storage/memory.js';
import { ChannelError, connectPrimary } from '../../src/transport/grpc/index.js';
import { storagePrefix, MOUNT_TABLE_PREFIX } from '../../src/vault/mounts.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, PERF, drOperationToken, drStatus, replStatus } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const nodes: TestNode[] = [];
const clients: PrimaryClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

async function node(): Promise<TestNode> {
  const n = await startTestNode();
  nodes.push(n);
  return n;
}

async function refused(p: Promise<unknown>): Promise<ChannelError> {
  const e = await p.then(() => new Error('expected a refusal'), (err: unknown) => err);
  expect(e).toBeInstanceOf(ChannelError);
  expect((e as ChannelError).reason).toBe('permission_denied');
  return e as ChannelError;
}

/** Every byte a call answered, to search for secrets afterwards. */
function recorder(): { seen: Buffer[]; keep: <T>(v: T) => T } {
  const seen: Buffer[] = [];
  const walk = (v: unknown): void => {
    if (Buffer.isBuffer(v)) seen.push(v);
    else if (typeof v === 'string') seen.push(Buffer.from(v));
    else if (typeof v === 'bigint' || typeof v === 'number') return;
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  return { seen, keep: (v) => (walk(v), v) };
}

describe('a valid secondary certificate on the cluster port', () => {
  it('reads nothing before bootstrap, never node-class keys, and the WAL carries none', async () => {
    const p = await node();
    await p.call('POST', 'sys/mounts/kv', { type: 'kv' });
    await p.call('PUT', 'kv/app', { password: 'replicated-secret' });
    expect((await p.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
    const pair = generateBoxKeyPair();
    const tok = await p.call('POST', `${DR}/primary/secondary-token`, { id: 'thief', secondary_public_key: pair.publicKeyB64 });
    expect(tok.status).toBe(200);
    const bundle = JSON.parse(Buffer.from(openSealed(tok.body.data.token, pair)).toString('utf8'));
    const client = connectPrimary({
      address: bundle.primary_cluster_addr,
      tls: { caPem: bundle.ca_pem, certPem: bundle.cert_pem, keyPem: bundle.key_pem, serverName: bundle.server_name },
      defaultDeadlineMs: 5_000,
    });
    clients.push(client);
    const caKey = p.node.dr.material.primary?.caKeyPem ?? '';
    const serverKey = p.node.dr.material.primary?.serverKeyPem ?? '';
    expect(caKey).toMatch(/PRIVATE KEY/);
    const recordCiphertext = await p.node.engine.readRaw(RECORD_KEY);
    expect(recordCiphertext?.length).toBeGreaterThan(0);
    const { seen, keep } = recorder();

    // Before its bootstrap the id is only issued: no snapshot, no stream, no heartbeat.
    await refused(client.openSnapshot('thief'));
    const early = await new Promise<Error | undefined>((resolve) => {
      client.streamWal({ secondaryId: 'thief', guard: genesisGuard(), maxBatchEntries: 64 }, { onMessage: (m) => void keep(m), onEnd: resolve });
    });
    expect((early as ChannelError).reason).toBe('permission_denied');

    keep(await client.bootstrap({ secondaryId: 'thief', version: VERSION, kind: 'dr', apiAddr: '', clusterAddr: '' }));

    const snap = keep(await client.openSnapshot('thief'));
    for (const key of [RECORD_KEY, 'node/replication/dr-operation-token/x', 'node/anything']) {
      const e = await refused(client.fetchValues(snap.snapshotId, [key]));
      expect(e.message).toMatch(/node class\) is not replicated to dr secondaries/);
      // All or nothing: an allowed key beside it does not open the door.
      await refused(client.fetchValues(snap.snapshotId, ['local/anything', key]));
    }
    // What DR does replicate is served: replicated and local classes.
    const leaves = [];
    const empty = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 1, walMaxBytes: 1 });
    for (const tree of [1, 2] as const) {
      const pages = keep(await client.pageHashes(snap.snapshotId, tree));
      const emptyPage = empty.pageHashes(tree)[0]!;
      for (let page = 0; page < pages.length; page++) {
        if (pages[page]?.equals(emptyPage)) continue;
        const subs = keep(await client.subpageHashes(snap.snapshotId, tree, page));
        const nonEmpty = subs.flatMap((h, i) => (h.equals(Buffer.alloc(32)) ? [] : [i]));
        leaves.push(...keep(await client.leaves(snap.snapshotId, tree, page, nonEmpty)));
      }
    }
    expect(leaves.some((l) => l.key.startsWith('local/'))).toBe(true);
    expect(leaves.some((l) => l.key.startsWith('logical/') || !l.key.startsWith('local/'))).toBe(true);
    expect(leaves.filter((l) => l.key.startsWith('node/'))).toEqual([]);
    const values = keep(await client.fetchValues(snap.snapshotId, leaves.map((l) => l.key)));
    expect(values.every((v) => v.value !== undefined)).toBe(true);

    // The whole WAL from the start: not one node-class op, though enable and secondary-token wrote some.
    const entries: WalEntry[] = [];
    const stream = client.streamWal({ secondaryId: 'thief', guard: genesisGuard(), maxBatchEntries: 512 }, {
      onMessage: (m: StreamMessage) => {
        keep(m);
        if (m.type === 'batch') entries.push(...m.entries);
      },
      onEnd: () => {},
    });
    const last = p.node.engine.lastGuard().index;
    try {
      await eventually(() => expect(entries.at(-1)?.index).toBe(last), { timeoutMs: 10_000, intervalMs: 20 });
    } finally {
      stream.cancel();
    }
    const keys = entries.flatMap((e) => e.ops.map((o) => o.key));
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((k) => k.startsWith('node/'))).toEqual([]);

    // Nothing secret in any answer: not the CA key, not the server key, not the record's ciphertext.
    const all = Buffer.concat(seen);
    for (const secret of [caKey, serverKey]) {
      const body = secret.split('\n').filter((l) => l !== '' && !l.startsWith('-----')).join('');
      expect(all.includes(Buffer.from(body.slice(0, 40)))).toBe(false);
      expect(all.includes(Buffer.from(body, 'base64').subarray(0, 40))).toBe(false);
    }
    expect(all.includes(recordCiphertext!.subarray(0, 48))).toBe(false);
  });

  it('a reconcile snapshot holds the WAL from before it is pinned: commits during a filtered view\'s scan cannot trim its guard', async () => {
    const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 8, walMaxBytes: 1 << 20 });
    for (let i = 0; i < 20; i++) await engine.commitRaw([{ type: 'put', key: `logical/m1/k${i}`, value: Buffer.from('v') }]);
    const allowAll = { verdict: () => 'allow' as const, keyAllowed: () => true, opAllowed: () => true };
    const svc = new PrimaryStreamer({
      engine, kind: 'performance', registry: { check: () => 'active' },
      info: { clusterId: () => 'c', nodeId: () => 'n', apiAddr: () => '', clusterAddr: () => '' },
      // A filter source that is slow the way a big catalog is: 30 commits (past the 8-entry bound) land while it answers.
      pathsFilter: {
        keyFilter: async () => {
          for (let i = 0; i < 30; i++) await engine.commitRaw([{ type: 'put', key: `logical/m1/during${i}`, value: Buffer.from('w') }]);
          return allowAll;
        },
        dynamicFor: async () => ({ dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] }),
      },
    });
    const peer = { secondaryId: 'perf', fingerprint: 'f', address: 'a' };
    try {
      const snap = await svc.openSnapshot(peer);
      // The secondary streams from guard + 1 after its sync: still retained, 30 commits later.
      expect(engine.firstRetainedIndex()).toBeLessThanOrEqual(snap.guard.index + 1n);
      expect(engine.lastGuard().index - snap.guard.index).toBeGreaterThanOrEqual(30n);
    } finally {
      await svc.close();
    }
  });

  it('one secondary holds at most MAX_OPEN_SNAPSHOTS pinned snapshots: opening another closes its oldest, not another secondary\'s', async () => {
    const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 100, walMaxBytes: 1 << 20 });
    await engine.commitRaw([{ type: 'put', key: 'logical/m1/a', value: Buffer.from('r') }]);
    const svc = new PrimaryStreamer({
      engine, kind: 'dr', registry: { check: () => 'active' },
      info: { clusterId: () => 'c', nodeId: () => 'n', apiAddr: () => '', clusterAddr: () => '' },
    });
    const thief = { secondaryId: 'thief', fingerprint: 'f', address: 'a' };
    const other = { secondaryId: 'other', fingerprint: 'g', address: 'b' };
    try {
      const others = await svc.openSnapshot(other);
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) ids.push((await svc.openSnapshot(thief)).snapshotId);
      const open: string[] = [];
      for (const id of ids) if (await svc.pageHashes(thief, id, 1).then(() => true, () => false)) open.push(id);
      expect(open).toEqual(ids.slice(-MAX_OPEN_SNAPSHOTS));
      expect((await svc.pageHashes(other, others.snapshotId, 1)).length).toBeGreaterThan(0);
    } finally {
      await svc.close();
    }
  });

  it('a performance secondary is served the replicated class only (the policy per kind)', async () => {
    const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 100, walMaxBytes: 1 << 20 });
    await engine.commitRaw([
      { type: 'put', key: 'logical/m1/a', value: Buffer.from('r') },
      { type: 'put', key: 'local/tokens/t', value: Buffer.from('l') },
    ]);
    const svc = new PrimaryStreamer({
      engine, kind: 'performance', registry: { check: () => 'active' },
      info: { clusterId: () => 'c', nodeId: () => 'n', apiAddr: () => '', clusterAddr: () => '' },
    });
    const peer = { secondaryId: 'perf', fingerprint: 'f', address: 'a' };
    try {
      const snap = await svc.openSnapshot(peer);
      expect(snap.subtreeRoots[1]).toEqual(Buffer.alloc(0));
      await expect(svc.fetchValues(peer, snap.snapshotId, ['local/tokens/t'])).rejects.toThrow(/local class\) is not replicated to performance secondaries/);
      await expect(svc.pageHashes(peer, snap.snapshotId, 2)).rejects.toThrow(/subtree 2 is not replicated to performance/);
      await expect(svc.leaves(peer, snap.snapshotId, 2, 0, [0])).rejects.toThrow(/subtree 2/);
      expect((await svc.fetchValues(peer, snap.snapshotId, ['logical/m1/a']))[0]?.value).toEqual(Buffer.from('r'));
    } finally {
      await svc.close();
    }
    expect(servePolicy('dr').classes).toEqual(['replicated', 'local']);
    expect(() => servePolicy('performance').admitKeys(['local/x'])).toThrow(/local class/);
  });
});

describe('a performance secondary certificate and its paths filter (issue 6 item 3)', () => {
  it('asking for keys of a mount its filter denies gets none of them, nor their values; the stream carries none', async () => {
    const p = await node();
    const hidden = ['filtered-secret-7f3a9c', 'filtered-later-41be02', 'filtered-live-9d01e5'];
    expect((await p.call('POST', 'sys/mounts/shared', { type: 'kv' })).status).toBe(204);
    expect((await p.call('POST', 'sys/mounts/hidden', { type: 'kv' })).status).toBe(204);
    expect((await p.call('PUT', 'shared/app', { password: 'shared-value' })).status).toBe(204);
    expect((await p.call('PUT', 'hidden/app', { password: hidden[0] })).status).toBe(204);
    expect((await p.call('POST', `${PERF}/primary/enable`, {})).status).toBe(204);
    const pair = generateBoxKeyPair();
    const tok = await p.call('POST', `${PERF}/primary/secondary-token`, { id: 'east', secondary_public_key: pair.publicKeyB64 });
    expect(tok.status).toBe(200);
    expect((await p.call('POST', `${PERF}/primary/paths-filter/east`, { mode: 'deny', paths: ['hidden'] })).status).toBe(204);
    // Written after the filter too: the stream sees this one as a live entry.
    expect((await p.call('PUT', 'hidden/later', { password: hidden[1] })).status).toBe(204);

    // The denied mount's keys as the primary stores them: its table entry and its data.
    const mount = p.node.core.mounts.get('', 'hidden/');
    const shared = p.node.core.mounts.get('', 'shared/');
    expect(mount && shared).toBeDefined();
    const deniedKey = (k: string): boolean => k.startsWith(storagePrefix(mount!)) || k === MOUNT_TABLE_PREFIX + mount!.uuid;
    const deniedNow = async (): Promise<string[]> => {
      const pinned = await p.node.engine.snapshot();
      const out: string[] = [];
      try {
        for await (const l of pinned.allLeaves(1)) if (deniedKey(l.key)) out.push(l.key);
      } finally {
        await pinned.close();
      }
      return out;
    };
    const deniedKeys = await deniedNow();
    expect(deniedKeys.filter((k) => k.startsWith(storagePrefix(mount!))).length).toBe(2);
    expect(deniedKeys).toContain(MOUNT_TABLE_PREFIX + mount!.uuid);

    const bundle = JSON.parse(Buffer.from(openSealed(tok.body.data.token, pair)).toString('utf8'));
    const client = connectPrimary({
      address: bundle.primary_cluster_addr,
      tls: { caPem: bundle.ca_pem, certPem: bundle.cert_pem, keyPem: bundle.key_pem, serverName: bundle.server_name },
      defaultDeadlineMs: 5_000,
    });
    clients.push(client);
    const { seen, keep } = recorder();
    keep(await client.bootstrap({ secondaryId: 'east', version: VERSION, kind: 'performance', apiAddr: '', clusterAddr: '' }));
    const snap = keep(await client.openSnapshot('east'));

    // Asked for by name, alone or beside an allowed key: refused, all or nothing.
    const sharedKey = `${storagePrefix(shared!)}app`;
    for (const key of deniedKeys) {
      await refused(client.fetchValues(snap.snapshotId, [key]));
      await refused(client.fetchValues(snap.snapshotId, [sharedKey, key]));
    }
    // Asked for by Merkle position: every page that holds anything lists only what the filter allows.
    const leaves = [];
    const empty = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 1, walMaxBytes: 1 });
    const emptyPage = empty.pageHashes(1)[0]!;
    await empty.close();
    const pages = keep(await client.pageHashes(snap.snapshotId, 1));
    for (let page = 0; page < pages.length; page++) {
      if (pages[page]!.equals(emptyPage)) continue;
      keep(await client.subpageHashes(snap.snapshotId, 1, page));
      leaves.push(...keep(await client.leaves(snap.snapshotId, 1, page, Array.from({ length: 256 }, (_, i) => i))));
    }
    expect(leaves.map((l) => l.key)).toContain(sharedKey);
    expect(leaves.filter((l) => deniedKey(l.key))).toEqual([]);
    const served = keep(await client.fetchValues(snap.snapshotId, leaves.map((l) => l.key)));
    expect(served.find((v) => v.key === sharedKey)?.value?.length).toBeGreaterThan(0);
    await client.closeSnapshot(snap.snapshotId);

    /** Streams from `guard`, keeping every answer, until `done` says so or the primary ends it. */
    const streamFrom = async (guard: typeof snap.guard, done: (entries: WalEntry[], m: StreamMessage) => boolean): Promise<WalEntry[]> => {
      const entries: WalEntry[] = [];
      let finished = false;
      const handle = client.streamWal({ secondaryId: 'east', guard, maxBatchEntries: 512 }, {
        onMessage: (m: StreamMessage) => {
          keep(m);
          if (m.type === 'batch') entries.push(...m.entries);
          if (done(entries, m)) finished = true;
        },
        onEnd: () => void (finished = true),
      });
      await eventually(() => expect(finished).toBe(true), { timeoutMs: 10_000, intervalMs: 20 });
      handle.cancel();
      return entries;
    };
    // From the start: the entries up to the filter change, then "reconcile" (as a real secondary
    // would, from the snapshot's guard); what it is sent carries no op of the denied mount.
    let starts = 0;
    const before = await streamFrom(genesisGuard(), (_e, m) => m.type === 'start' && ++starts === 2 && m.outcome === 'non_matching_guard');
    // From the snapshot on, live: a write to the denied mount is not in the stream, a shared one is.
    const live = streamFrom(snap.guard, (e) => e.some((x) => x.ops.some((o) => o.key === `${storagePrefix(shared!)}next`)));
    expect((await p.call('PUT', 'hidden/third', { password: hidden[2] })).status).toBe(204);
    expect((await p.call('PUT', 'shared/next', { password: 'shared-next' })).status).toBe(204);
    const after = await live;
    expect(after.at(-1)?.index).toBe(p.node.engine.lastGuard().index);
    const keys = [...before, ...after].flatMap((e) => e.ops.map((o) => o.key));
    expect(keys).toContain(sharedKey);
    expect(keys.filter(deniedKey)).toEqual([]);

    // Not a byte of the denied values in any answer: neither the plaintext nor the stored ciphertext.
    const finalDenied = await deniedNow();
    expect(finalDenied.length).toBe(deniedKeys.length + 1);
    const ciphertexts = await Promise.all(finalDenied.map(async (k) => (await p.node.engine.readRaw(k))!));
    expect(ciphertexts.every((c) => c.length > 48)).toBe(true);
    const all = Buffer.concat(seen);
    for (const secret of hidden) expect(all.includes(Buffer.from(secret))).toBe(false);
    for (const c of ciphertexts) expect(all.includes(c.subarray(0, 48))).toBe(false);
  });
});

describe('update-primary by address after revocation (issue 6 item 7)', () => {
  it('a revoked secondary cannot probe its primary: a clear 400, and nothing changes', async () => {
    const a = await node();
    const b = await node();
    await joinSecondary(a, b, 'b');
    const before = await drStatus(b);
    expect((await a.call('POST', `${DR}/primary/revoke-secondary`, { id: 'b' })).status).toBe(204);
    const op = await drOperationToken(b, a.unsealKeys.slice(0, 2));
    const r = await b.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: op, update_primary_addrs: [before.primary_cluster_addr] }, { token: null });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(/none of the update_primary_addrs answered/);
    expect(r.body.errors[0]).toMatch(/refused this secondary: .*revoked/);
    const after = await drStatus(b);
    expect(after).toMatchObject({
      mode: 'secondary',
      secondary_id: 'b',
      primary_cluster_addr: before.primary_cluster_addr,
      known_primary_cluster_addrs: before.known_primary_cluster_addrs,
      cluster_id: before.cluster_id,
    });
  });
});
