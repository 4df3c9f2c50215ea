/**
 * Encryption at rest: after a clean stop and after a SIGKILL (when the newest writes sit only in
 * LevelDB's log file), no file of the node holds a secret value, the root token or the unseal key
 * in its raw bytes; after a restart and unseal the secrets read back.
 */
import { randomUUID } from 'node:crypto';
import { initAndUnseal, mountKv2, scanForStrings, unseal, useHarness, vault, type InitResult } from '../harness/index.js';

const h = useHarness();

function needles(init: InitResult, markers: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {
    rootToken: init.rootToken,
    // The random part alone too, in case the prefix is stored apart from it.
    rootTokenBody: init.rootToken.replace(/^hvs\./, ''),
    unsealKeyHex: init.keys[0]!,
    unsealKeyBase64: init.keysBase64[0]!,
  };
  markers.forEach((m, i) => (out[`marker${i}`] = m));
  return out;
}

test('secrets, the root token and the unseal key never reach disk in the clear', async () => {
  const node = await h.startNode();
  const init = await initAndUnseal(node.apiAddr);
  await mountKv2(node.apiAddr, init.rootToken);
  const marker1 = `at-rest-marker-${randomUUID()}`;
  expect((await vault(node.apiAddr, init.rootToken).put('secret/data/app', { data: { password: marker1 } })).status).toBe(200);
  expect(await node.stop()).toEqual({ code: 0, signal: null });

  // The scanner must be able to see plaintext: LevelDB's MANIFEST names its comparator.
  const sanity = await scanForStrings(node.storageDir, { comparator: 'leveldb.BytewiseComparator' });
  expect(sanity.findings.length).toBeGreaterThan(0);

  const afterStop = await scanForStrings(node.dataDir, needles(init, [marker1]));
  expect(afterStop.files).toBeGreaterThan(2);
  expect(afterStop.findings).toEqual([]);

  // Restart, read back, write again, and crash without a clean close.
  const second = await h.startNode({ dataDir: node.dataDir });
  await unseal(second.apiAddr, init.keys[0]!);
  const v = vault(second.apiAddr, init.rootToken);
  expect((await v.get('secret/data/app')).body.data.data).toEqual({ password: marker1 });
  const marker2 = `at-rest-marker-${randomUUID()}`;
  expect((await v.put('secret/data/crash', { data: { password: marker2 } })).status).toBe(200);
  expect((await second.kill('SIGKILL')).signal).toBe('SIGKILL');

  const afterKill = await scanForStrings(node.dataDir, needles(init, [marker1, marker2]));
  expect(afterKill.findings).toEqual([]);

  const third = await h.startNode({ dataDir: node.dataDir });
  await unseal(third.apiAddr, init.keys[0]!);
  const v3 = vault(third.apiAddr, init.rootToken);
  expect((await v3.get('secret/data/app')).body.data.data).toEqual({ password: marker1 });
  expect((await v3.get('secret/data/crash')).body.data.data).toEqual({ password: marker2 });
  expect(await third.stop()).toEqual({ code: 0, signal: null });
}, 60_000);
