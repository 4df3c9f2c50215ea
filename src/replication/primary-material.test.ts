import { X509Certificate } from 'node:crypto';
import { SpareMaterial } from './primary-material.js';

const caOf = (pem: string): string => new X509Certificate(pem).subject;

describe('SpareMaterial: a secondary\'s credentials made ahead of a promotion', () => {
  it('hands the spare made for a cluster to that cluster\'s promotion, once', async () => {
    const spare = new SpareMaterial();
    spare.prepare('c-1', Date.now());
    expect(spare.has('c-1')).toBe(true);
    // Asking again for the same cluster keeps the one under way.
    spare.prepare('c-1', Date.now());
    const first = await spare.take('c-1', Date.now());
    expect(caOf(first.caCertPem)).toContain('c-1');
    expect(first.serverName).toBe('primary.c-1.tessera');
    expect(new X509Certificate(first.serverCertPem).checkIssued(new X509Certificate(first.caCertPem))).toBe(true);
    expect(spare.has('c-1')).toBe(false);
    // Used once: the next promotion makes its own.
    const second = await spare.take('c-1', Date.now());
    expect(second.caCertPem).not.toBe(first.caCertPem);
  });

  it('never hands a spare made for another cluster', async () => {
    const spare = new SpareMaterial();
    spare.prepare('c-old', Date.now());
    const m = await spare.take('c-new', Date.now());
    expect(caOf(m.caCertPem)).toContain('c-new');
    expect(m.serverName).toBe('primary.c-new.tessera');
  });
});
