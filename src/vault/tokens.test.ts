import { randomBytes } from 'node:crypto';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import { MapStore } from '../storage/store.js';
import { randomBase62 } from './token-entry.js';
import { hashToken, tokenKeys } from './token-keys.js';
import { parseDuration } from '../core/duration.js';
import { TokenStore } from './tokens.js';
import type { TokenEntryView } from './tokens.js';
import { SlowStore } from '../../test/support/slow-store.js';

const T0 = Date.UTC(2024, 4, 1, 12, 0, 0);
const TOKEN_RE = /^hvs\.[0-9A-Za-z]{24}$/;

function setup() {
  const clock = { ms: T0 };
  const store = new SlowStore();
  const tokens = new TokenStore(store, { now: () => clock.ms });
  return { clock, store, tokens };
}

async function rootView(tokens: TokenStore): Promise<{ token: string; view: TokenEntryView }> {
  const { token } = await tokens.createRoot();
  const view = await tokens.lookup(token);
  if (view === undefined) throw new Error('root not found');
  return { token, view };
}

async function view(tokens: TokenStore, token: string): Promise<TokenEntryView> {
  const v = await tokens.lookup(token);
  if (v === undefined) throw new Error('token not found');
  return v;
}

function tokenEntryKeys(store: MapStore): string[] {
  return [...store.data.keys()].filter((k) => k.startsWith('local/token/id/'));
}

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

describe('TokenStore: child rules', () => {
  async function appParent(tokens: TokenStore) {
    const root = await rootView(tokens);
    const auth = await tokens.create(root.view, { policies: ['app', 'db'] }, 'a/');
    return { root, parent: await view(tokens, auth.client_token) };
  }

  it('keeps child policies within the parent\'s unless the caller is privileged', async () => {
    const { tokens } = setup();
    const { parent } = await appParent(tokens);
    expect((await tokens.create(parent, { policies: ['app'] }, 'a/')).policies).toEqual(['app', 'default']);
    expect((await tokens.create(parent, {}, 'a/')).policies).toEqual(['app', 'db', 'default']);
    expect((await tokens.create(parent, { no_default_policy: true }, 'a/')).policies).toEqual(['app', 'db']);
    await expect(tokens.create(parent, { policies: ['app', 'admin'] }, 'a/')).rejects.toThrow(InvalidRequest);
    expect((await tokens.create(parent, { policies: ['admin'] }, 'a/', { privileged: true })).policies).toEqual([
      'admin',
      'default',
    ]);
    await expect(tokens.create(parent, { policies: ['root'] }, 'a/', { privileged: true })).rejects.toThrow(
      InvalidRequest,
    );
  });

  it('sanitises policy lists: root alone, others sorted with default', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    expect((await tokens.create(root.view, { policies: ['x', 'root'] }, '')).policies).toEqual(['root']);
    expect((await tokens.create(root.view, { policies: [' B', 'a', 'a ', ''] }, '')).policies).toEqual([
      'a',
      'b',
      'default',
    ]);
    expect((await tokens.create(root.view, {}, '')).policies).toEqual(['root']);
  });

  it('requires privilege for orphans and chosen ids, and refuses ids with a dot', async () => {
    const { tokens } = setup();
    const { root, parent } = await appParent(tokens);
    await expect(tokens.create(parent, { no_parent: true }, 'a/')).rejects.toThrow(InvalidRequest);
    await expect(tokens.create(parent, { id: 'chosen' }, 'a/')).rejects.toThrow(InvalidRequest);
    await expect(tokens.create(root.view, { id: 'has.dot' }, '')).rejects.toThrow(InvalidRequest);
    const viaRoute = await tokens.create(parent, { no_parent: true }, 'a/', { allowOrphan: true });
    expect(viaRoute.orphan).toBe(true);
    await expect(
      tokens.create(parent, { no_parent: true, policies: ['admin'] }, 'a/', { allowOrphan: true }),
    ).rejects.toThrow(InvalidRequest);
    const orphan = await tokens.create(parent, { no_parent: true }, 'a/', { privileged: true });
    expect(orphan.orphan).toBe(true);
    expect((await view(tokens, orphan.client_token)).parent).toBe('');
  });

  it('creates only in the parent\'s namespace or below', async () => {
    const { tokens } = setup();
    const { parent } = await appParent(tokens);
    expect((await view(tokens, (await tokens.create(parent, {}, 'a/b/')).client_token)).namespace_path).toBe('a/b/');
    await expect(tokens.create(parent, {}, 'b/')).rejects.toThrow(PermissionDenied);
    await expect(tokens.create(parent, {}, '')).rejects.toThrow(PermissionDenied);
  });

  it('refuses a child to a parent revoked since its request was authorised', async () => {
    const { tokens } = setup();
    const { parent } = await appParent(tokens);
    await tokens.revokeTree(parent.hash);
    await expect(tokens.create(parent, {}, 'a/')).rejects.toThrow(PermissionDenied);
  });
});

describe('TokenStore: revocation', () => {
  it('revokes a tree in one commit, sparing orphans and the rest', async () => {
    const { tokens, store } = setup();
    const root = await rootView(tokens);
    const a = await tokens.create(root.view, { policies: ['app'] }, '');
    const aView = await view(tokens, a.client_token);
    const b = await tokens.create(aView, {}, '');
    const c = await tokens.create(await view(tokens, b.client_token), {}, '');
    const d = await tokens.create(aView, {}, '');
    const orphan = await tokens.create(aView, { no_parent: true }, '', { privileged: true });
    const sibling = await tokens.create(root.view, {}, '');

    const before = store.commits.length;
    await expect(tokens.revoke(a.client_token)).resolves.toBe(true);
    expect(store.commits.length - before).toBe(1);

    for (const gone of [a, b, c, d]) {
      expect(await tokens.lookup(gone.client_token)).toBeUndefined();
      expect(store.data.has(tokenKeys.accessor(gone.accessor))).toBe(false);
    }
    for (const kept of [orphan, sibling]) expect(await tokens.lookup(kept.client_token)).toBeDefined();
    expect(await tokens.lookup(root.token)).toBeDefined();
    const links = [...store.data.keys()].filter((k) => k.startsWith('local/token/parent/'));
    expect(links).toEqual([tokenKeys.child(root.view.hash, hashToken(sibling.client_token))]);
    await expect(tokens.revoke(a.client_token)).resolves.toBe(false);
  });

  it('finds and revokes by accessor', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    const a = await tokens.create(root.view, { policies: ['app'] }, '');
    const b = await tokens.create(await view(tokens, a.client_token), {}, '');
    expect((await tokens.lookupByAccessor(a.accessor))?.hash).toBe(hashToken(a.client_token));
    expect(await tokens.lookupByAccessor('../id/x')).toBeUndefined();
    await expect(tokens.revokeAccessor('nope')).resolves.toBe(false);
    await expect(tokens.revokeAccessor(a.accessor)).resolves.toBe(true);
    expect(await tokens.lookupByAccessor(a.accessor)).toBeUndefined();
    expect(await tokens.lookup(b.client_token)).toBeUndefined();
  });

  it('revoke-orphan keeps the children, now as orphans', async () => {
    const { tokens, store } = setup();
    const root = await rootView(tokens);
    const a = await tokens.create(root.view, { policies: ['app'] }, '');
    const b = await tokens.create(await view(tokens, a.client_token), {}, '');
    await expect(tokens.revokeOrphan(a.client_token)).resolves.toBe(true);
    expect(await tokens.lookup(a.client_token)).toBeUndefined();
    expect(await tokens.lookup(b.client_token)).toMatchObject({ parent: '', orphan: true });
    expect([...store.data.keys()].some((k) => k.startsWith(tokenKeys.childrenOf(hashToken(a.client_token))))).toBe(false);
  });

  it('never leaves a child of a parent revoked while the child was being created', async () => {
    for (let round = 0; round < 10; round++) {
      const { tokens, store } = setup();
      const root = await rootView(tokens);
      const a = await tokens.create(root.view, { policies: ['app'] }, '');
      const aView = await view(tokens, a.client_token);
      const creates = Array.from({ length: round % 4 }, () => tokens.create(aView, {}, ''));
      await Promise.allSettled([...creates, tokens.revoke(a.client_token), tokens.create(aView, {}, '')]);
      expect(tokenEntryKeys(store)).toEqual([tokenKeys.entry(root.view.hash)]);
    }
  });

  it('tidy takes an expired parent\'s children and keeps live tokens', async () => {
    const { tokens, clock } = setup();
    const root = await rootView(tokens);
    const a = await tokens.create(root.view, { policies: ['app'], ttl: 60 }, '');
    const b = await tokens.create(await view(tokens, a.client_token), {}, '');
    const live = await tokens.create(root.view, { ttl: 600 }, '');
    clock.ms += 120_000;
    await expect(tokens.tidy()).resolves.toBe(2);
    expect(await tokens.lookup(b.client_token)).toBeUndefined();
    expect(await tokens.lookup(live.client_token)).toBeDefined();
  });
});

it('default options use the real clock and crypto randomness', async () => {
  const tokens = new TokenStore(new MapStore());
  const { token } = await tokens.createRoot();
  const entry = await view(tokens, token);
  expect(Math.abs(entry.creation_time - Date.now() / 1000)).toBeLessThan(5);
  expect(randomBase62(24, randomBytes)).toMatch(/^[0-9A-Za-z]{24}$/);
});
