/**
 * Issue 6: token TTLs bounded by the system limits (items 4), revocation that no stored record can
 * make fail (item 4, on a real LevelDB engine), and namespace scope of lookups and revocations
 * (item 2).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidRequest } from '../core/errors.js';
import { StorageEngine } from '../storage/engine.js';
import { testCipher } from '../storage/engine.fixtures.js';
import { openLevelBackend, type LevelBackend } from '../storage/leveldb.js';
import { MapStore, type Store } from '../storage/store.js';
import { hashToken, tokenKeys } from './token-keys.js';
import { TokenStore, type TokenEntryView } from './tokens.js';

const T0 = Date.UTC(2024, 4, 1, 12, 0, 0);
const H768 = 768 * 3600;

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

describe('TokenStore: system TTL limits', () => {
  const setup = (limits?: { maxTtl: number; defaultTtl: number }) => {
    const store = new MapStore();
    const tokens = new TokenStore(store, { now: () => T0, ...(limits ? { limits } : {}) });
    return { store, tokens };
  };

  it('caps a huge ttl at 768h with Vault\'s warning', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    const { auth, warnings } = await tokens.createWithWarnings(root.view, { policies: ['app'], ttl: '1000000h' }, '');
    expect(auth.lease_duration).toBe(H768);
    expect(warnings).toEqual(['TTL of "1000000h0m0s" exceeded the effective max_ttl of "768h0m0s"; TTL value is capped accordingly']);
    expect((await view(tokens, auth.client_token)).expire_time).toBe(T0 / 1000 + H768);
  });

  it('refuses a ttl that cannot be represented, storing nothing', async () => {
    const { tokens, store } = setup();
    const root = await rootView(tokens);
    const before = store.data.size;
    await expect(tokens.create(root.view, { ttl: '99999999999999h' }, '')).rejects.toThrow(InvalidRequest);
    await expect(tokens.create(root.view, { explicit_max_ttl: '99999999999999h' }, '')).rejects.toThrow(InvalidRequest);
    expect(store.data.size).toBe(before);
  });

  it('gives a token without a ttl the default, except a root token', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    const { auth, warnings } = await tokens.createWithWarnings(root.view, { policies: ['app'] }, '');
    expect(auth.lease_duration).toBe(H768);
    expect(warnings).toEqual([]);
    expect((await tokens.create(root.view, {}, '')).lease_duration).toBe(0);
  });

  it('caps explicit_max_ttl at the maximum with a warning, and the ttl with it', async () => {
    const { tokens } = setup();
    const root = await rootView(tokens);
    const { auth, warnings } = await tokens.createWithWarnings(root.view, { explicit_max_ttl: '1000000h' }, '');
    expect(warnings).toEqual([
      `Explicit max TTL of ${1_000_000 * 3600} seconds is greater than system/mount allowed value; value is being capped to ${H768} seconds`,
    ]);
    expect(auth.lease_duration).toBe(H768);
    expect((await view(tokens, auth.client_token)).explicit_max_ttl).toBe(H768);
  });

  it('applies configured limits', async () => {
    const { tokens } = setup({ maxTtl: 3600, defaultTtl: 600 });
    const root = await rootView(tokens);
    expect((await tokens.create(root.view, { policies: ['app'] }, '')).lease_duration).toBe(600);
    const { auth, warnings } = await tokens.createWithWarnings(root.view, { policies: ['app'], ttl: '2h' }, '');
    expect(auth.lease_duration).toBe(3600);
    expect(warnings).toEqual(['TTL of "2h0m0s" exceeded the effective max_ttl of "1h0m0s"; TTL value is capped accordingly']);
    expect((await tokens.createWithWarnings(root.view, { ttl: '30m' }, '')).warnings).toEqual([]);
  });
});

describe('TokenStore: revocation of records it could not have written', () => {
  let dir: string;
  let backend: LevelBackend;
  let store: Store;
  let tokens: TokenStore;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tessera-tokens-'));
    backend = await openLevelBackend({ path: join(dir, 'db') });
    const engine = await StorageEngine.open(backend, { walMaxEntries: 1000, walMaxBytes: 1 << 24 });
    store = engine.secure(testCipher());
    tokens = new TokenStore(store, { now: () => T0 });
  });
  afterEach(async () => {
    await backend.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Writes an entry for `token` under `parent` straight through the store, as an older version or a bug might have. */
  async function plant(token: string, parent: TokenEntryView, value: Buffer, accessor: string): Promise<void> {
    const hash = hashToken(token);
    await store.commit([
      { type: 'put', key: tokenKeys.entry(hash), value },
      { type: 'put', key: tokenKeys.accessor(accessor), value: Buffer.from(hash, 'utf8') },
      { type: 'put', key: tokenKeys.child(parent.hash, hash), value: Buffer.alloc(0) },
    ]);
  }

  const absurd = (parent: TokenEntryView, accessor: string, expire: number): Buffer =>
    Buffer.from(
      JSON.stringify({
        accessor,
        policies: ['default'],
        ttl: 99999999999999 * 3600,
        creation_time: T0 / 1000,
        expire_time: expire,
        num_uses: 0,
        parent: parent.hash,
        namespace_path: '',
        display_name: 'token',
        meta: null,
        orphan: false,
        type: 'service',
        path: 'auth/token/create',
        explicit_max_ttl: 0,
        renewable: true,
      }),
    );

  it('uses, looks up and revokes a token whose expiry is past the safe-integer range', async () => {
    const root = await rootView(tokens);
    const parent = await tokens.create(root.view, { policies: ['app'], ttl: '1h' }, '');
    const parentView = await view(tokens, parent.client_token);
    const accessor = 'A'.repeat(24);
    await plant('hvs.absurd', parentView, absurd(parentView, accessor, T0 / 1000 + 99999999999999 * 3600), accessor);

    const used = await tokens.validateForUse('hvs.absurd');
    expect(used.accessor).toBe(accessor);
    expect(tokens.lookupResponse(used, 'hvs.absurd')).toMatchObject({ expire_time: '9999-12-31T23:59:59Z' });
    await expect(tokens.revoke('hvs.absurd')).resolves.toBe(true);
    expect(await store.get(tokenKeys.entry(hashToken('hvs.absurd')))).toBeUndefined();
    expect(await store.get(tokenKeys.accessor(accessor))).toBeUndefined();
    expect(await store.list(tokenKeys.childrenOf(parentView.hash))).toEqual([]);
  });

  it('revokes the parent of a record with an absurd expiry, or one that is not even JSON, with its tree', async () => {
    const root = await rootView(tokens);
    const parent = await tokens.create(root.view, { policies: ['app'] }, '');
    const parentView = await view(tokens, parent.client_token);
    const a1 = 'B'.repeat(24);
    const a2 = 'C'.repeat(24);
    await plant('hvs.absurd', parentView, absurd(parentView, a1, 1e300), a1);
    await plant('hvs.garbage', parentView, Buffer.from('{"accessor": "CCCC'), a2);
    const sibling = await tokens.create(parentView, {}, '');

    await expect(tokens.revoke(parent.client_token)).resolves.toBe(true);
    for (const t of [parent.client_token, 'hvs.absurd', 'hvs.garbage', sibling.client_token]) {
      expect(await store.get(tokenKeys.entry(hashToken(t)))).toBeUndefined();
    }
    expect(await store.get(tokenKeys.accessor(a1))).toBeUndefined();
    expect(await store.list(tokenKeys.childrenOf(parentView.hash))).toEqual([]);
    expect(await tokens.validateForUse(root.token)).toMatchObject({ policies: ['root'] });
  });

  it('revokes a malformed record by token and by accessor, and tidy passes over one', async () => {
    const root = await rootView(tokens);
    const accessor = 'D'.repeat(24);
    await plant('hvs.garbage', root.view, Buffer.from('not json'), accessor);
    await expect(tokens.tidy()).resolves.toBe(0);
    await expect(tokens.revokeOrphan('hvs.garbage')).resolves.toBe(true);
    expect(await store.get(tokenKeys.entry(hashToken('hvs.garbage')))).toBeUndefined();

    await plant('hvs.garbage2', root.view, Buffer.from('[1,2]'), accessor);
    await expect(tokens.revokeAccessor(accessor)).resolves.toBe(true);
    expect(await store.get(tokenKeys.entry(hashToken('hvs.garbage2')))).toBeUndefined();
    // A namespace cannot revoke what it cannot tell is its own.
    await plant('hvs.garbage3', root.view, Buffer.from('not json'), accessor);
    await expect(tokens.revoke('hvs.garbage3', 'nsx/')).resolves.toBe(false);
    expect(await store.get(tokenKeys.entry(hashToken('hvs.garbage3')))).toBeDefined();
  });
});

describe('TokenStore: namespace scope', () => {
  it('treats a token above the scope as unknown for lookup and every revocation', async () => {
    const store = new MapStore();
    const tokens = new TokenStore(store, { now: () => T0 });
    const root = await rootView(tokens);
    const top = await tokens.create(root.view, { policies: ['app'] }, '');
    const inNs = await tokens.create(root.view, { policies: ['app'] }, 'nsx/');
    const inChild = await tokens.create(root.view, { policies: ['app'] }, 'nsx/child/');
    const entries = () => [...store.data.keys()].filter((k) => k.startsWith('local/token/id/')).length;
    const before = entries();

    for (const t of [root.token, top.client_token]) {
      expect(await tokens.lookup(t, 'nsx/')).toBeUndefined();
      await expect(tokens.revoke(t, 'nsx/')).resolves.toBe(false);
      await expect(tokens.revokeOrphan(t, 'nsx/')).resolves.toBe(false);
    }
    for (const a of [root.view.accessor, top.accessor]) {
      expect(await tokens.lookupByAccessor(a, 'nsx/')).toBeUndefined();
      await expect(tokens.revokeAccessor(a, 'nsx/')).resolves.toBe(false);
    }
    expect(await tokens.lookup(inNs.client_token, 'nsx/child/')).toBeUndefined();
    expect(entries()).toBe(before);

    expect((await tokens.lookup(inChild.client_token, 'nsx/'))?.namespace_path).toBe('nsx/child/');
    expect((await tokens.lookupByAccessor(inNs.accessor, 'nsx/'))?.namespace_path).toBe('nsx/');
    await expect(tokens.revokeAccessor(inChild.accessor, 'nsx/')).resolves.toBe(true);
    await expect(tokens.revoke(inNs.client_token, 'nsx/')).resolves.toBe(true);
    expect(entries()).toBe(before - 2);
    expect(await tokens.lookup(top.client_token)).toBeDefined();
  });
});
