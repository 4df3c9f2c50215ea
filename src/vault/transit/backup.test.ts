/**
 * Transit backups in Vault's format: what a Go keysutil backup looks like (type numbers, base64
 * []byte, RFC 3339 times with nanoseconds, durations in ns, archived versions, ECDSA and RSA
 * private keys as JSON integers of any length) restores here exactly, and what this engine writes
 * reads back with the same keys.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import { fromBackup, toBackup } from './backup.js';
import { generateAsymmetric } from './asymmetric.js';
import { isAsymmetric, newPolicy, type KeyPolicy } from './policy.js';
import { decryptValue, encryptValue } from './symmetric.js';

const now = new Date('2026-11-29T12:00:00Z');

const bigint = (b64url: string | undefined): string => BigInt(`0x${Buffer.from(b64url ?? '', 'base64url').toString('hex')}`).toString(10);

describe('transit backups in Vault\'s format', () => {
  it('restores a blob as Go writes it: archived versions, nanosecond times, the key type number', () => {
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    const entry = (k: Buffer, t: string) => `{"key":"${k.toString('base64')}","hmac_key":"${randomBytes(32).toString('base64')}","time":"${t}","ec_x":null,"ec_y":null,"ec_d":null,"rsa_key":null,"rsa_public_key":null,"public_key":"","convergent_version":0,"creation_time":1764417600,"certificate_chain":null}`;
    const e1 = entry(k1, '2026-11-29T12:00:00.123456789Z');
    const e2 = entry(k2, '2026-11-30T12:00:00.5Z');
    // Version 1 is below min_decryption_version... then lowered back: Vault keeps it in the archive only.
    const json = `{"policy":{"name":"legacy","keys":{"2":${e2}},"derived":false,"kdf":0,"convergent_encryption":false,"exportable":true,"min_decryption_version":1,"min_encryption_version":0,"latest_version":2,"archive_version":2,"archive_min_version":0,"min_available_version":0,"deletion_allowed":false,"convergent_version":0,"type":5,"backup_info":{"time":"2026-11-30T13:00:00.000000001Z","version":2},"restore_info":null,"allow_plaintext_backup":true,"version_template":"","storage_prefix":"","auto_rotate_period":7200000000000,"Imported":false,"AllowImportedKeyRotation":false},"archived_keys":{"keys":[${entry(Buffer.alloc(0), '0001-01-01T00:00:00Z').replace('"key":""', '"key":null')},${e1},${e2}]}}`;
    const p = fromBackup(Buffer.from(json).toString('base64'), undefined, now);
    expect(p).toMatchObject({ name: 'legacy', type: 'chacha20-poly1305', latest_version: 2, auto_rotate_period: 7200, exportable: true, restore_info: { time: now.toISOString(), version: 2 } });
    expect(Object.keys(p.keys).sort()).toEqual(['1', '2']);
    expect(p.keys['1']?.key).toBe(k1.toString('base64'));
    const ct = encryptValue(p, { plaintext: Buffer.from('x'), version: 1 }).ciphertext;
    expect(decryptValue(p, { ciphertext: ct }).plaintext.toString()).toBe('x');
  });

  it('restores ECDSA keys from Go\'s big integers exactly (77-digit coordinates)', () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = pair.privateKey.export({ format: 'jwk' });
    const e = `{"key":null,"hmac_key":"${randomBytes(32).toString('base64')}","time":"2026-11-29T12:00:00Z","ec_x":${bigint(jwk.x)},"ec_y":${bigint(jwk.y)},"ec_d":${bigint(jwk.d)},"rsa_key":null,"public_key":"","convergent_version":0,"creation_time":1764417600}`;
    const json = `{"policy":{"name":"sig","keys":{"1":${e}},"latest_version":1,"min_decryption_version":1,"type":1,"exportable":true,"allow_plaintext_backup":true},"archived_keys":{"keys":[]}}`;
    const p = fromBackup(Buffer.from(json).toString('base64'), 'renamed', now);
    expect(p.name).toBe('renamed');
    const restored = createPrivateKey({ key: Buffer.from(p.keys['1']?.private_pkcs8 ?? '', 'base64'), format: 'der', type: 'pkcs8' });
    expect(restored.export({ format: 'jwk' })).toEqual(jwk);
    expect(p.keys['1']?.public_key).toBe(createPublicKey(restored).export({ format: 'pem', type: 'spki' }));
  });

  it.each(['aes256-gcm96', 'hmac', 'ed25519', 'ecdsa-p384', 'rsa-2048'] as const)('%s: what this engine writes restores to the same keys', (type) => {
    const p: KeyPolicy = { ...newPolicy({ name: 'k', type, exportable: true, allowPlaintextBackup: true }, now, isAsymmetric(type) ? generateAsymmetric(type) : undefined), deletion_allowed: true };
    const { blob, policy } = toBackup(p, now);
    expect(policy.backup_info).toEqual({ time: now.toISOString(), version: 1 });
    const json = Buffer.from(blob, 'base64').toString('utf8');
    expect(JSON.parse(json).policy.type).toBe({ 'aes256-gcm96': 0, hmac: 10, ed25519: 2, 'ecdsa-p384': 6, 'rsa-2048': 3 }[type]);
    if (type === 'ecdsa-p384') expect(json).toMatch(/"ec_d":\d{100,}/);
    if (type === 'rsa-2048') expect(json).toMatch(/"rsa_key":\{"N":\d{600,},"E":65537,"D":\d+/);
    const back = fromBackup(blob, undefined, now);
    expect(back.keys['1']?.key).toBe(p.keys['1']?.key);
    expect(back.keys['1']?.hmac_key).toBe(p.keys['1']?.hmac_key);
    if (p.keys['1']?.private_pkcs8 !== undefined) {
      const jwk = (b64: string | undefined) => createPrivateKey({ key: Buffer.from(b64 ?? '', 'base64'), format: 'der', type: 'pkcs8' }).export({ format: 'jwk' });
      expect(jwk(back.keys['1']?.private_pkcs8)).toEqual(jwk(p.keys['1']?.private_pkcs8));
    }
    expect(back).toMatchObject({ name: 'k', type, deletion_allowed: true, exportable: true, allow_plaintext_backup: true });
  });

  it('refuses what may not be backed up, and blobs that are not backups', () => {
    const p = newPolicy({ name: 'k', type: 'aes256-gcm96' }, now);
    expect(() => toBackup(p, now)).toThrow('exporting is disallowed on the policy');
    expect(() => toBackup({ ...p, exportable: true }, now)).toThrow('plaintext backup is disallowed on the policy');
    expect(() => fromBackup('not base64 json', undefined, now)).toThrow(InvalidRequest);
    expect(() => fromBackup(Buffer.from('{"policy":{"type":99,"latest_version":1}}').toString('base64'), undefined, now)).toThrow(InvalidRequest);
  });
});
