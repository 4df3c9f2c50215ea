/**
 * Real Vault clients, unmodified, on transit (issue 30): Debian's python3-hvac (test/e2e/hvac/
 * transit.py: keys, encrypt, decrypt, rotate, rewrap, batch, derived keys, data keys, HMAC and
 * verify, hash, random, export, backup and restore, config, trim, delete) and node-vault's
 * transit commands, on one real node.
 */
import vaultFactory from 'node-vault';
import { runHvac } from '../harness/hvac.js';
import { useHarness } from '../harness/index.js';

const h = useHarness();

test('python3-hvac and node-vault drive transit', async () => {
  const node = await h.startNode();
  const seen = await runHvac('transit.py', node.apiAddr);
  const { root_token: rootToken, ...rest } = seen;
  expect(rest).toEqual({
    key_type: 'aes256-gcm96',
    keys: ['app'],
    ciphertext_prefix: 'vault:v1:',
    decrypted: 'hvac plaintext',
    latest_version: 2,
    rewrapped_prefix: 'vault:v2:',
    batch_count: 2,
    derived_roundtrip: 'x',
    datakey_bytes: 32,
    hmac_prefix: 'vault:v2:',
    hmac_valid: true,
    hash: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    random_len: 24,
    export_versions: ['1', '2'],
    restored_decrypts: 'hvac plaintext',
    old_refused: true,
    trim_min: 2,
    deleted: true,
  });

  const client = vaultFactory({ apiVersion: 'v1', endpoint: node.apiAddr, token: rootToken as string });
  await client.transitCreateKey({ name: 'nv', type: 'chacha20-poly1305' });
  expect((await client.transitReadKey({ name: 'nv' })).data).toMatchObject({ name: 'nv', type: 'chacha20-poly1305', latest_version: 1 });
  expect((await client.transitListKeys()).data.keys).toContain('nv');
  const plaintext = Buffer.from('node-vault plaintext').toString('base64');
  const { data: enc } = await client.encryptData({ name: 'nv', plaintext });
  expect(enc.ciphertext).toMatch(/^vault:v1:/);
  expect((await client.decryptData({ name: 'nv', ciphertext: enc.ciphertext })).data.plaintext).toBe(plaintext);
  expect((await client.rewrapData({ name: 'nv', ciphertext: enc.ciphertext })).data.ciphertext).toMatch(/^vault:v1:/);
  await expect(client.decryptData({ name: 'nv', ciphertext: 'vault:v1:AAAA' })).rejects.toMatchObject({ response: { statusCode: 400 }, message: 'invalid ciphertext length' });
}, 60_000);
