/**
 * Auth methods over the in-memory store: login TTLs against the system bounds, and password
 * hashes that never verify a wrong or malformed input.
 */
import { MapStore } from '../../storage/store.js';
import { TokenStore } from '../tokens.js';
import { AuthMethods } from './index.js';
import { hashPassword, verifyPassword } from './password.js';

function setup(limits = { maxTtl: 600, defaultTtl: 300 }) {
  const store = new MapStore();
  const tokens = new TokenStore(store, { limits });
  return { store, tokens, methods: new AuthMethods(() => store, tokens, { limits, now: Date.now }) };
}

describe('login TTL', () => {
  it('is the system default when nothing is set, and capped by the system max_lease_ttl', async () => {
    const { methods } = setup();
    const entry = await methods.table.enable('', 'userpass/', { type: 'userpass' });
    const up = methods.userpass(entry);
    await up.write('plain', { password: 'pw', params: {} });
    await up.write('long', { password: 'pw', params: { token_ttl: 3600 } });
    expect((await up.login('plain', 'pw')).auth.lease_duration).toBe(300);
    const long = await up.login('long', 'pw');
    expect(long.auth.lease_duration).toBe(600);
    expect(long.warnings).toHaveLength(1);
  });

  it('takes the smallest of token_max_ttl, the mount max and the system max', async () => {
    const { methods } = setup({ maxTtl: 7200, defaultTtl: 3600 });
    const entry = await methods.table.enable('', 'approle/', { type: 'approle', config: { max_lease_ttl: 1800 } });
    const ar = methods.approle(entry);
    await ar.writeRole('r', { params: { token_max_ttl: 900 } });
    const { secret_id } = (await ar.generateSecretId('r', {})) as { secret_id: string };
    const { role_id } = await ar.readRoleId('r');
    expect((await ar.login(role_id, secret_id)).auth.lease_duration).toBe(900);
  });
});

describe('password hashes', () => {
  it('verify only the password they were made from; malformed or missing hashes never verify', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).not.toContain('correct');
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    expect(await verifyPassword('correct horsf', stored)).toBe(false);
    expect(await verifyPassword('correct horse', undefined)).toBe(false);
    expect(await verifyPassword('correct horse', 'scrypt$1$1$1$$')).toBe(false);
    expect(await verifyPassword('correct horse', stored.replace(/\$[^$]+$/, '$AAAA'))).toBe(false);
    expect(await hashPassword('correct horse')).not.toBe(stored); // salted
  });
});
