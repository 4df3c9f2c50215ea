/**
 * Issue 27 item 3 on real processes: key rotation under 8 writers with a DR and a performance
 * secondary, a PGP rekey on the primary, restarts of every node unsealing with the new shares, a
 * DR promote reading every acknowledged write; SIGKILL while a rotation and while a rekey's final
 * step are in flight (the node unseals with exactly one of the two share sets and reads every
 * key); and Debian's hvac, unmodified, for the rotate and rekey calls it has.
 */
import { decrypt, generateKey, readMessage, readPrivateKey } from 'openpgp';
import { runHvac } from '../harness/hvac.js';
import {
  DR, drOperationToken, eventually, lastAcked, startCluster, startWriter, unseal, useHarness, vault, waitInSync, waitStreaming, type AckedWrite, type StartedNode,
} from '../harness/index.js';

const h = useHarness();

/**
 * Every path's last acknowledged value reads back from `apiAddr`. With `killed`, a later write of
 * the same client may be there instead (it was durable, its answer died with the process).
 */
async function readsAll(apiAddr: string, token: string, acked: readonly AckedWrite[], killed = false): Promise<void> {
  const v = vault(apiAddr, token);
  const seq = (value: string): number => Number(/n(\d+)$/.exec(value)?.[1] ?? -1);
  for (const [path, value] of lastAcked(acked)) {
    const r = await v.get(path);
    const got: string | undefined = r.body?.data?.data?.value;
    const same = killed && got !== undefined && got.split('n')[0] === value.split('n')[0] && seq(got) >= seq(value) ? value : got;
    expect({ path, status: r.status, value: same }).toEqual({ path, status: 200, value });
  }
}

/** Restarts `n` on its storage (after SIGKILL); `wrong` shares must fail, `keys` must unseal. */
async function restart(n: StartedNode, keys: readonly string[], wrong?: readonly string[]): Promise<StartedNode> {
  await n.kill('SIGKILL');
  return reopen(n.dataDir, keys, wrong);
}

/** A restart opens a node full of the writers' data: on a loaded CI machine that took over the 20 s default once. */
const RESTART_READY_MS = 60_000;

async function reopen(dataDir: string, keys: readonly string[], wrong?: readonly string[]): Promise<StartedNode> {
  const again = await h.startNode({ dataDir, readyTimeoutMs: RESTART_READY_MS });
  if (wrong !== undefined) {
    let last: { status: number; body: any } | undefined;
    for (const key of wrong) last = await vault(again.apiAddr).put('sys/unseal', { key });
    expect({ status: last?.status, errors: last?.body.errors }).toEqual({ status: 400, errors: ['Unseal failed, invalid key'] });
  }
  for (const key of keys) await unseal(again.apiAddr, key);
  expect((await vault(again.apiAddr).get('sys/seal-status')).body.sealed).toBe(false);
  return again;
}

/** Whichever share set unseals the node at `dataDir`: 'old' or 'new' (never both, never neither). */
async function unsealsWith(dataDir: string, old: readonly string[], fresh: readonly string[]): Promise<{ node: StartedNode; set: 'old' | 'new' }> {
  const node = await h.startNode({ dataDir, readyTimeoutMs: RESTART_READY_MS });
  const v = vault(node.apiAddr);
  const attempt = async (keys: readonly string[]): Promise<boolean> => {
    for (const key of keys) {
      const r = await v.put('sys/unseal', { key });
      if (r.status === 400) return false;
    }
    return (await v.get('sys/seal-status')).body.sealed === false;
  };
  if (await attempt(old)) return { node, set: 'old' };
  expect(await attempt(fresh)).toBe(true);
  return { node, set: 'new' };
}

test('rotation under 8 writers reaches a DR and a performance secondary; a PGP rekey changes the shares of every node; restarts and a DR promote read every write', async () => {
  const cluster = await startCluster(h, { mountKv2: true, dr: ['dr-keys'], performance: ['perf-keys'] });
  let p = cluster.primary;
  let d: StartedNode = cluster.dr[0]!;
  const s = cluster.performance[0]!;
  const root = p.rootToken;
  const writer = startWriter({ apiAddr: p.apiAddr, token: root, clients: 8, path: (c, n) => `secret/data/c${c}/k${n % 16}` });
  let acked: readonly AckedWrite[];
  try {
    for (let i = 1; i <= 2; i++) {
      const before = writer.acked.length;
      await eventually(() => expect(writer.acked.length).toBeGreaterThan(before + 100), { timeoutMs: 20_000, intervalMs: 25 });
      expect((await vault(p.apiAddr, root).put('sys/rotate', {})).status).toBe(204);
    }
    const after = writer.acked.length;
    await eventually(() => expect(writer.acked.length).toBeGreaterThan(after + 100), { timeoutMs: 20_000, intervalMs: 25 });
  } finally {
    acked = await writer.stop();
  }
  expect((await vault(p.apiAddr, root).get('sys/key-status')).body.data.term).toBe(3);
  const { primary, secondary } = await waitInSync(p.apiAddr, d.apiAddr);
  expect(secondary.merkle_root).toBe(primary.merkle_root);
  await waitInSync(p.apiAddr, s.apiAddr, 20_000, 'performance');
  await readsAll(p.apiAddr, root, acked);
  await readsAll(s.apiAddr, s.rootToken, acked);
  const check = await vault(p.apiAddr, root).post('sys/replication/merkle-check', {});
  expect(check.body.data.merkle_corruption_report.corrupted_root).toBe(false);

  // A rekey with PGP keys: the decrypted new shares unseal the primary and both secondaries.
  const pairs = await Promise.all([1, 2, 3].map((i) => generateKey({ userIDs: [{ name: `holder-${i}` }], format: 'binary' })));
  const started = await vault(p.apiAddr).put('sys/rekey/init', { secret_shares: 3, secret_threshold: 2, pgp_keys: pairs.map((k) => Buffer.from(k.publicKey).toString('base64')) });
  expect(started.status).toBe(200);
  let done: any;
  for (const key of p.unsealKeys.slice(0, 2)) done = (await vault(p.apiAddr).put('sys/rekey/update', { key, nonce: started.body.nonce })).body;
  expect(done.complete).toBe(true);
  const fresh = await Promise.all(done.keys_base64.map(async (b64: string, i: number) => {
    const message = await readMessage({ binaryMessage: Buffer.from(b64, 'base64') });
    const { data } = await decrypt({ message, decryptionKeys: await readPrivateKey({ binaryKey: pairs[i]!.privateKey }), format: 'binary' });
    return Buffer.from(data as Uint8Array).toString('utf8');
  })) as string[];
  const old = p.unsealKeys.slice(0, 2);
  await waitInSync(p.apiAddr, d.apiAddr);
  await waitInSync(p.apiAddr, s.apiAddr, 20_000, 'performance');

  d = await restart(d, fresh.slice(1, 3), old);
  await waitInSync(p.apiAddr, d.apiAddr);
  const perf = await restart(s, fresh.slice(0, 2), old);
  await readsAll(perf.apiAddr, s.rootToken, acked);
  await waitStreaming(perf.apiAddr, { kind: 'performance', timeoutMs: 20_000 });
  p = Object.assign(await restart(p, fresh.slice(0, 2), old), { rootToken: root });
  await readsAll(p.apiAddr, root, acked);

  // The DR secondary, promoted after two rotations and the rekey, reads every acknowledged write.
  await p.kill('SIGKILL');
  const opToken = await drOperationToken(d.apiAddr, fresh.slice(0, 2));
  let promote = await vault(d.apiAddr).post(`${DR}/secondary/promote`, { dr_operation_token: opToken });
  if (promote.status === 400) promote = await vault(d.apiAddr).post(`${DR}/secondary/promote`, { dr_operation_token: opToken, force: true });
  expect(promote.status).toBe(204);
  await readsAll(d.apiAddr, root, acked);
  expect((await vault(d.apiAddr, root).get('sys/key-status')).body.data.term).toBe(3);
}, 240_000);

test('SIGKILL while a rotation or a rekey\'s final step is in flight: the node unseals with exactly one share set and reads every key', async () => {
  let n = await h.startNode({ init: { shares: 3, threshold: 2 } });
  const root = n.rootToken!;
  let keys = n.unsealKeys.slice(0, 2);
  await vault(n.apiAddr, root).post('sys/mounts/secret', { type: 'kv', options: { version: '2' } });
  const acked: AckedWrite[] = [];
  const outcomes: string[] = [];
  for (const delayMs of [0, 3, 15]) {
    // A rotation in flight with writes around it.
    const writer = startWriter({ apiAddr: n.apiAddr, token: root, clients: 2, path: (c, i) => `secret/data/r${delayMs}c${c}/k${i % 4}` });
    await eventually(() => expect(writer.acked.length).toBeGreaterThan(20), { timeoutMs: 10_000, intervalMs: 10 });
    void vault(n.apiAddr, root).put('sys/rotate', {}).catch(() => undefined);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    await n.kill('SIGKILL');
    acked.push(...(await writer.stop()));
    n = await reopen(n.dataDir, keys);
    await readsAll(n.apiAddr, root, acked, true);

    // A rekey whose verification (the step that switches the root key) is in flight.
    const v = vault(n.apiAddr);
    const started = await v.put('sys/rekey/init', { secret_shares: 2, secret_threshold: 2, require_verification: true });
    let done: any;
    for (const key of keys) done = (await v.put('sys/rekey/update', { key, nonce: started.body.nonce })).body;
    const fresh: string[] = done.keys;
    expect((await v.put('sys/rekey/verify', { key: fresh[0], nonce: done.verification_nonce })).status).toBe(200);
    void v.put('sys/rekey/verify', { key: fresh[1], nonce: done.verification_nonce }).catch(() => undefined);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    await n.kill('SIGKILL');
    const after = await unsealsWith(n.dataDir, keys, fresh);
    n = after.node;
    outcomes.push(after.set);
    if (after.set === 'new') keys = fresh;
    await readsAll(n.apiAddr, root, acked, true);
    expect((await vault(n.apiAddr, root).put(`secret/data/after-${delayMs}`, { data: { value: 'ok' } })).status).toBe(200);
    acked.push({ path: `secret/data/after-${delayMs}`, value: 'ok' });
  }
  // Which side of the commit each kill landed on is timing; every outcome is one of the two.
  expect(outcomes.every((o) => o === 'old' || o === 'new')).toBe(true);
}, 180_000);

test('python3-hvac rotates, reads the key status and rekeys, unmodified', async () => {
  const node = await h.startNode();
  expect(await runHvac('keys.py', node.apiAddr)).toEqual({
    term_before: 1,
    rotate_status: 204,
    term_after: 2,
    install_time_set: true,
    rekey_started: true,
    rekey_required: 2,
    rekey_progress_one: 1,
    rekey_complete: true,
    new_keys: 2,
    cancel_status: 204,
    started_after_cancel: false,
    sealed_after_new_keys: false,
    reads: ['1', '2'],
  });
});
