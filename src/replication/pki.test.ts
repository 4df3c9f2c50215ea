import { X509Certificate, createPrivateKey } from 'node:crypto';
import { InvalidRequest } from '../core/errors.js';
import { createCa, fingerprintOf, identityOf, issueLeaf, nameOf } from './pki.js';

const NOW = Date.UTC(2030, 0, 1);
const DAY = 86_400_000;

describe('replication PKI', () => {
  it('creates a P-256 CA that may sign leaves only', async () => {
    const ca = await createCa({ clusterId: 'c-1', now: NOW });
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toContain('tessera replication CA c-1');
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.checkPrivateKey(createPrivateKey(ca.keyPem))).toBe(true);
    expect(Date.parse(cert.validFrom)).toBeLessThanOrEqual(NOW);
    expect(Date.parse(cert.validTo)).toBeGreaterThan(NOW + 3000 * DAY);
  });

  it.each(['server', 'client'] as const)('issues a %s leaf named by its DNS SAN, signed by the CA', async (usage) => {
    const ca = await createCa({ clusterId: 'c-1', now: NOW });
    const leaf = await issueLeaf(ca, { name: 'dr-east.example', usage, ttlDays: 30, now: NOW });
    const cert = new X509Certificate(leaf.certPem);
    const caCert = new X509Certificate(ca.certPem);

    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.checkPrivateKey(createPrivateKey(leaf.keyPem))).toBe(true);
    expect(cert.subjectAltName).toBe('DNS:dr-east.example');
    expect(cert.subject).toBe('CN=dr-east.example');
    expect(cert.checkHost('dr-east.example')).toBe('dr-east.example');
    expect(cert.keyUsage).toEqual([usage === 'server' ? '1.3.6.1.5.5.7.3.1' : '1.3.6.1.5.5.7.3.2']);
    expect(cert.serialNumber.toLowerCase()).toBe(leaf.serial);
    expect(Date.parse(cert.validTo)).toBe(Math.floor((NOW + 30 * DAY) / 1000) * 1000);
    expect(Date.parse(cert.validFrom)).toBeLessThanOrEqual(NOW);
    expect(Date.parse(cert.validFrom)).toBeGreaterThan(NOW - 3_600_000);

    const nodeFingerprint = cert.fingerprint256.replaceAll(':', '').toLowerCase();
    expect(leaf.fingerprint).toBe(nodeFingerprint);
    expect(fingerprintOf(leaf.certPem)).toBe(nodeFingerprint);
    expect(fingerprintOf(cert.raw)).toBe(nodeFingerprint);
    expect(nameOf(leaf.certPem)).toBe('dr-east.example');
    expect(nameOf(cert.raw)).toBe('dr-east.example');
  });

  it('accepts Vault-style ids with underscores', async () => {
    const ca = await createCa({ clusterId: 'c-1', now: NOW });
    const leaf = await issueLeaf(ca, { name: 'dr_secondary-2', usage: 'client', ttlDays: 1, now: NOW });
    expect(nameOf(leaf.certPem)).toBe('dr_secondary-2');
  });

  it('reads the identity from node\'s parsed SAN and CN forms', () => {
    expect(identityOf('DNS:s1', 'other')).toBe('s1');
    expect(identityOf('IP Address:10.0.0.1, DNS:s2, DNS:s3', undefined)).toBe('s2');
    expect(identityOf('URI:"https://x/a, DNS:fake", DNS:real', undefined)).toBe('real');
    expect(identityOf('DNS:"we\\"ird, name"', undefined)).toBe('we"ird, name');
    expect(identityOf(undefined, 'cn-only')).toBe('cn-only');
    expect(() => identityOf('IP Address:10.0.0.1', undefined)).toThrow(InvalidRequest);
  });

  it('gives every leaf its own key, serial and fingerprint', async () => {
    const ca = await createCa({ clusterId: 'c-1', now: NOW });
    const a = await issueLeaf(ca, { name: 's1', usage: 'client', ttlDays: 1, now: NOW });
    const b = await issueLeaf(ca, { name: 's1', usage: 'client', ttlDays: 1, now: NOW });
    expect(a.serial).not.toBe(b.serial);
    expect(a.fingerprint).not.toBe(b.fingerprint);
    expect(a.keyPem).not.toBe(b.keyPem);
    expect(a.serial).toMatch(/^[4-7][0-9a-f]{31}$/);
  });

  it('a leaf of another CA does not verify against this CA', async () => {
    const ca = await createCa({ clusterId: 'c-1', now: NOW });
    const other = await createCa({ clusterId: 'c-2', now: NOW });
    const leaf = await issueLeaf(other, { name: 's1', usage: 'client', ttlDays: 1, now: NOW });
    expect(new X509Certificate(leaf.certPem).verify(new X509Certificate(ca.certPem).publicKey)).toBe(false);
  });

  it('refuses names that cannot be DNS SANs and non-positive ttls', async () => {
    const ca = await createCa({ clusterId: 'c-1', now: NOW });
    for (const name of ['', 'has space', 'a,b', 'a/b', '-lead', 'x'.repeat(254)]) {
      await expect(issueLeaf(ca, { name, usage: 'client', ttlDays: 1, now: NOW })).rejects.toBeInstanceOf(InvalidRequest);
    }
    await expect(issueLeaf(ca, { name: 's1', usage: 'client', ttlDays: 0, now: NOW })).rejects.toBeInstanceOf(InvalidRequest);
  });
});
