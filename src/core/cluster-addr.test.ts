/** Cluster addresses in both of Vault's forms (WIRE.md section 8). */
import { clusterHostPort, optionalClusterHostPort, vaultClusterAddr } from './cluster-addr.js';

describe('clusterHostPort', () => {
  it.each([
    ['https://10.0.0.5:8201', '10.0.0.5:8201'],
    ['HTTPS://vault.example:8201/', 'vault.example:8201'],
    ['tcp://10.0.0.5:8201', '10.0.0.5:8201'],
    [' 10.0.0.5:8201 ', '10.0.0.5:8201'],
    ['https://[::1]:8201', '[::1]:8201'],
  ])('%s -> %s', (raw, want) => expect(clusterHostPort(raw)).toBe(want));

  it.each(['http://10.0.0.5:8201', '10.0.0.5', 'https://10.0.0.5', 'https://10.0.0.5:8201/v1', 'https://', '', 'a:b', 'https://h:70000'])('refuses %j', (raw) => {
    expect(clusterHostPort(raw)).toBeUndefined();
  });

  it('keeps an empty optional address empty', () => {
    expect(optionalClusterHostPort('')).toBe('');
    expect(optionalClusterHostPort('https://h:1')).toBe('h:1');
    expect(optionalClusterHostPort('h')).toBeUndefined();
  });
});

describe('vaultClusterAddr', () => {
  it('answers https://host:port, leaving empty and schemed addresses alone', () => {
    expect(vaultClusterAddr('10.0.0.5:8201')).toBe('https://10.0.0.5:8201');
    expect(vaultClusterAddr('')).toBe('');
    expect(vaultClusterAddr('https://h:1')).toBe('https://h:1');
  });
});
