/**
 * TokenStore: issuing, TTLs and use counts. Child rules and revocation: tokens.tree.test.ts;
 * system TTL bounds, malformed records and namespace scope on a real engine: tokens.bounds.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import { MapStore } from '../storage/store.js';
import { randomBase62 } from './token-entry.js';
import { hashToken, tokenKeys } from './token-keys.js';
import { parseDuration } from '../core/duration.js';
import { TokenStore } from './tokens.js';
import { T0, TOKEN_RE, rootView, setup, tokenEntryKeys, view } from './tokens.fixtures.js';

describe('TokenStore: issuing', () => {
  it('issues hvs. + 24 base62 tokens and 24-character accessors', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    expect(root.token).toMatch(TOKEN_RE);
    expect(root.view.accessor).toMatch(/^[0-9A-Za-z]{24}$/);
    const child = await tokens.create(root.view, { policies: ['app'] }, '');
    expect(child.client_token).toMatch(TOKEN_RE);
    expect(child.client_token).not.toBe(root.token);
  });

  it('draws characters from the injected random source, rejecting biased bytes', () => {
    const calls: number[] = [];
    const random = (n: number): Buffer => {
      calls.push(n);
      return Buffer.from([255, 248, 0, 61, 62, 247, ...Array(n).fill(1)]);
    };
    // 255 and 248 are skipped; 0 -> '0', 61 -> 'z', 62 -> '0', 247 -> 247 % 62 = 61 -> 'z'.
    expect(randomBase62(6, random)).toBe('0z0z11');
    expect(calls).toEqual([12]);
  });

  it('uses the injected random source for tokens', async () => {
    const tokens = new TokenStore(new MapStore(), { random: (n) => Buffer.alloc(n, 10) });
    await expect(tokens.createRoot()).resolves.toEqual({ token: `hvs.${'A'.repeat(24)}`, accessor: 'A'.repeat(24) });
  });

  it('never stores a raw token in any key or value', async () => {
    const { tokens, store } = setup();
    const root = await rootView(tokens);
    const limited = await tokens.create(root.view, { policies: ['app'], num_uses: 3 }, '');
    const child = await tokens.create(root.view, { policies: ['app'] }, '');
    const grandchild = await tokens.create(await view(tokens, child.client_token), { policies: ['app'] }, '', {
      privileged: true,
    });
    const custom = await tokens.create(root.view, { id: 'my-chosen-token-id' }, '');
    const raws = [root.token, limited.client_token, child.client_token, grandchild.client_token, custom.client_token];
    const secrets = [...raws, ...raws.map((t) => t.replace(/^hvs\./, ''))];
    expect(store.data.size).toBeGreaterThan(8);
    for (const [key, value] of store.data) {
      for (const secret of secrets) {
        expect(key).not.toContain(secret);
        expect(value.toString('utf8')).not.toContain(secret);
        expect(value.toString('base64')).not.toContain(Buffer.from(secret).toString('base64'));
      }
    }
    expect(store.data.has(tokenKeys.entry(hashToken(root.token)))).toBe(true);
  });

  it('takes a chosen root id once and refuses a duplicate', async () => {
    const { tokens } = setup();
    await expect(tokens.createRoot({ id: 'root' })).resolves.toMatchObject({ token: 'root' });
    expect((await tokens.lookup('root'))?.policies).toEqual(['root']);
    await expect(tokens.createRoot({ id: 'root' })).rejects.toThrow(InvalidRequest);
  });

  it('answers create with Vault\'s auth block', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    const auth = await tokens.create(
      root.view,
      { policies: ['App', 'db', 'app'], ttl: '1h', num_uses: '4', display_name: 'my app!', meta: { team: 'x' } },
      '',
    );
    expect(auth).toEqual({
      client_token: expect.stringMatching(TOKEN_RE),
      accessor: expect.stringMatching(/^[0-9A-Za-z]{24}$/),
      policies: ['app', 'db', 'default'],
      token_policies: ['app', 'db', 'default'],
      metadata: { team: 'x' },
      lease_duration: 3600,
      renewable: true,
      entity_id: '',
      token_type: 'service',
      orphan: false,
      num_uses: 4,
    });
    const entry = await view(tokens, auth.client_token);
    expect(entry).toMatchObject({ display_name: 'token-my-app', parent: root.view.hash, path: 'auth/token/create' });
  });

  it('builds lookup data with remaining ttl and RFC 3339 times', async () => {
    const { tokens, clock } = setup();
    const root = await rootView(tokens);
    const auth = await tokens.create(root.view, { policies: ['app'], ttl: '30m' }, '');
    clock.ms += 600_000;
    const entry = await view(tokens, auth.client_token);
    expect(tokens.lookupResponse(entry, auth.client_token)).toEqual({
      accessor: auth.accessor,
      creation_time: T0 / 1000,
      creation_ttl: 1800,
      display_name: 'token',
      entity_id: '',
      expire_time: '2024-05-01T12:30:00Z',
      explicit_max_ttl: 0,
      id: auth.client_token,
      issue_time: '2024-05-01T12:00:00Z',
      meta: null,
      num_uses: 0,
      orphan: false,
      path: 'auth/token/create',
      policies: ['app', 'default'],
      renewable: true,
      ttl: 1200,
      type: 'service',
    });
    expect(tokens.lookupResponse(root.view)).toMatchObject({ id: '', expire_time: null, ttl: 0, policies: ['root'] });
  });
});

describe('TokenStore: ttl', () => {
  it('stops honouring a token when its ttl runs out, and tidy deletes it', async () => {
    const { tokens, clock, store } = setup();
    const root = await rootView(tokens);
    const auth = await tokens.create(root.view, { policies: ['app'], ttl: '30m' }, '');
    clock.ms += 1800_000 - 1;
    await expect(tokens.validateForUse(auth.client_token)).resolves.toMatchObject({ accessor: auth.accessor });
    clock.ms += 1;
    expect(await tokens.lookup(auth.client_token)).toBeUndefined();
    expect(await tokens.lookupByAccessor(auth.accessor)).toBeUndefined();
    await expect(tokens.validateForUse(auth.client_token)).rejects.toThrow(PermissionDenied);
    expect(tokenEntryKeys(store)).toHaveLength(2);
    await expect(tokens.tidy()).resolves.toBe(1);
    expect(tokenEntryKeys(store)).toEqual([tokenKeys.entry(root.view.hash)]);
    expect(store.data.has(tokenKeys.accessor(auth.accessor))).toBe(false);
    expect(await tokens.validateForUse(root.token)).toMatchObject({ policies: ['root'] });
  });

  it('caps ttl at explicit_max_ttl and a child at its parent\'s expiry', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    const capped = await tokens.create(root.view, { ttl: '2h', explicit_max_ttl: '1h' }, '');
    expect(capped.lease_duration).toBe(3600);
    const parent = await view(tokens, capped.client_token);
    const child = await tokens.create(parent, { ttl: 7200 }, '');
    expect(child.lease_duration).toBe(3600);
    expect((await view(tokens, child.client_token)).expire_time).toBe(parent.expire_time);
    const noTtl = await tokens.create(parent, {}, '');
    expect(noTtl.lease_duration).toBe(3600);
    const orphan = await tokens.create(root.view, { no_parent: true }, '');
    expect(orphan.lease_duration).toBe(0);
    expect(orphan.renewable).toBe(false);
  });

  it('parses durations the Vault way', () => {
    const table: Array<[string | number, number]> = [
      ['30m', 1800],
      ['1h', 3600],
      ['90s', 90],
      ['1800', 1800],
      [1800, 1800],
      ['1h30m', 5400],
      ['2d', 172800],
      ['', 0],
    ];
    for (const [input, seconds] of table) expect(parseDuration(input)).toBe(seconds);
    for (const bad of ['abc', '-5', '5x', '1h 2m']) expect(() => parseDuration(bad, 'ttl')).toThrow(InvalidRequest);
  });

  it('rejects a malformed ttl or num_uses in create', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    await expect(tokens.create(root.view, { ttl: 'soon' }, '')).rejects.toThrow(InvalidRequest);
    await expect(tokens.create(root.view, { num_uses: -1 }, '')).rejects.toThrow(InvalidRequest);
    await expect(tokens.create(root.view, { num_uses: 'many' }, '')).rejects.toThrow(InvalidRequest);
  });
});

describe('TokenStore: num_uses', () => {
  it('counts down and revokes on the use that reaches zero', async () => {
    const { tokens, store } = setup();
    const root = await rootView(tokens);
    const auth = await tokens.create(root.view, { num_uses: 3 }, '');
    const left = [];
    for (let i = 0; i < 3; i++) left.push((await tokens.validateForUse(auth.client_token)).num_uses);
    expect(left).toEqual([2, 1, -1]);
    await expect(tokens.validateForUse(auth.client_token)).rejects.toThrow(PermissionDenied);
    expect(tokenEntryKeys(store)).toEqual([tokenKeys.entry(root.view.hash)]);
    expect(store.data.has(tokenKeys.child(root.view.hash, hashToken(auth.client_token)))).toBe(false);
  });

  it('lets exactly 5 of 16 concurrent uses through a num_uses=5 token', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    const auth = await tokens.create(root.view, { num_uses: 5 }, '');
    const results = await Promise.allSettled(Array.from({ length: 16 }, () => tokens.validateForUse(auth.client_token)));
    const ok = results.filter((r) => r.status === 'fulfilled');
    const denied = results.filter((r) => r.status === 'rejected' && r.reason instanceof PermissionDenied);
    expect(ok).toHaveLength(5);
    expect(denied).toHaveLength(11);
    expect(await tokens.lookup(auth.client_token)).toBeUndefined();
  });

  it('does not resurrect a use-limited token revoked while it is being used', async () => {
    // Each round starts the use a few event-loop turns after the revocation, to cover every interleaving.
    for (let delay = 0; delay < 8; delay++) {
      const { tokens, store } = setup();
      const root = await rootView(tokens);
      const auth = await tokens.create(root.view, { num_uses: 10 }, '');
      const use = (async () => {
        for (let i = 0; i < delay; i++) await new Promise((r) => setImmediate(r));
        return tokens.validateForUse(auth.client_token);
      })();
      await Promise.allSettled([tokens.revoke(auth.client_token), use]);
      expect(store.data.has(tokenKeys.entry(hashToken(auth.client_token)))).toBe(false);
    }
  });

  it('refuses children to a use-limited parent', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    const auth = await tokens.create(root.view, { num_uses: 3, policies: ['app'] }, '');
    const parent = await tokens.validateForUse(auth.client_token);
    await expect(tokens.create(parent, {}, '')).rejects.toThrow(InvalidRequest);
  });
});

it('default options use the real clock and crypto randomness', async () => {
  const tokens = new TokenStore(new MapStore());
  const { token } = await tokens.createRoot();
  const entry = await view(tokens, token);
  expect(Math.abs(entry.creation_time - Date.now() / 1000)).toBeLessThan(5);
  expect(randomBase62(24, randomBytes)).toMatch(/^[0-9A-Za-z]{24}$/);
});
