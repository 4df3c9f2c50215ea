/**
 * TokenStore: the rules for children (policies, orphans, chosen ids, namespaces) and revocation of
 * a token's tree. Issuing, TTLs and use counts: tokens.test.ts.
 */
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import { hashToken, tokenKeys } from './token-keys.js';
import type { TokenStore } from './tokens.js';
import { rootView, setup, tokenEntryKeys, view } from './tokens.fixtures.js';

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
