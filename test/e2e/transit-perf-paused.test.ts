/**
 * Issue 30 on real processes: a performance secondary encrypts, decrypts, signs and verifies
 * with its replicated transit keys while its primary is frozen (SIGSTOP): had any of them gone to
 * the primary, it would have failed after the forwarding's deadline instead. Once the primary
 * resumes, a rotation made there reaches the secondary, and each decrypts what the other made.
 */
import { eventually, startCluster, useHarness, vault } from '../harness/index.js';

const h = useHarness();
const b64 = (s: string): string => Buffer.from(s).toString('base64');

test('a performance secondary serves transit with its primary frozen', async () => {
  const { primary: p, performance: [s] } = await startCluster(h, { performance: ['perf-transit'] });
  const pv = vault(p.apiAddr, p.rootToken);
  const sv = vault(s!.apiAddr, s!.rootToken);
  expect((await pv.post('sys/mounts/transit', { type: 'transit' })).status).toBe(204);
  expect((await pv.post('transit/keys/app', {})).status).toBe(200);
  expect((await pv.post('transit/keys/signer', { type: 'ecdsa-p256' })).status).toBe(200);
  await eventually(async () => expect((await sv.get('transit/keys/signer')).status).toBe(200), { timeoutMs: 20_000 });
  const before = (await pv.post('transit/encrypt/app', { plaintext: b64('made before the freeze') })).body.data.ciphertext as string;

  p.proc.kill('SIGSTOP');
  let during: string;
  try {
    expect((await sv.post('transit/decrypt/app', { ciphertext: before })).body.data.plaintext).toBe(b64('made before the freeze'));
    const enc = await sv.post('transit/encrypt/app', { plaintext: b64('made during the freeze') });
    expect(enc.status).toBe(200);
    during = enc.body.data.ciphertext as string;
    const signed = await sv.post('transit/sign/signer', { input: b64('m') });
    expect((await sv.post('transit/verify/signer', { input: b64('m'), signature: signed.body.data.signature })).body.data).toEqual({ valid: true });
    expect((await sv.post('transit/datakey/wrapped/app', {})).status).toBe(200);
  } finally {
    p.proc.kill('SIGCONT');
  }

  // The primary back: a rotation there reaches the secondary; both decrypt what either made.
  expect((await pv.post('transit/keys/app/rotate', {})).status).toBe(200);
  await eventually(async () => expect((await sv.get('transit/keys/app')).body.data.latest_version).toBe(2), { timeoutMs: 20_000 });
  expect((await pv.post('transit/decrypt/app', { ciphertext: during })).body.data.plaintext).toBe(b64('made during the freeze'));
  const v2 = (await sv.post('transit/encrypt/app', { plaintext: b64('v2') })).body.data.ciphertext as string;
  expect(v2).toMatch(/^vault:v2:/);
  expect((await pv.post('transit/decrypt/app', { ciphertext: v2 })).body.data.plaintext).toBe(b64('v2'));
}, 120_000);
