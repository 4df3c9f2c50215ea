import { InvalidRequest } from '../core/errors.js';
import { classify } from '../storage/keyspace.js';
import { BATCH_DENY_PREFIX, BATCH_KEY_RECORD } from './batch-tokens.js';
import { TokenStore } from './tokens.js';
import type { TokenEntryView } from './tokens.js';
import { SlowStore } from '../../test/support/slow-store.js';

const T0 = Date.UTC(2024, 4, 1, 12, 0, 0);

async function setup() {
  const clock = { ms: T0 };
  const store = new SlowStore();
  const tokens = new TokenStore(store, { now: () => clock.ms });
  const { token: root } = await tokens.createRoot();
  const rootView = (await tokens.lookup(root)) as TokenEntryView;
  return { clock, store, tokens, root, rootView };
}

describe('batch tokens', () => {
  it('are sealed, never stored, and carry their entry: no accessor, not renewable, type batch', async () => {
    const { store, tokens, rootView } = await setup();
    const before = [...store.data.keys()].filter((k) => k !== BATCH_KEY_RECORD);
    const auth = await tokens.create(rootView, { type: 'batch', policies: ['ops'], ttl: '1h', renewable: true }, '', { path: 'auth/token/create-orphan', allowOrphan: true, privileged: true });
    expect(auth.client_token).toMatch(/^hvb\.[A-Za-z0-9_-]+$/);
    expect(auth).toMatchObject({ accessor: '', token_type: 'batch', renewable: false, lease_duration: 3600, policies: ['default', 'ops'] });
    // Only the key was written, in the replicated class.
    expect([...store.data.keys()].filter((k) => k !== BATCH_KEY_RECORD)).toEqual(before);
    expect(classify(BATCH_KEY_RECORD)).toBe('replicated');
    const entry = await tokens.lookup(auth.client_token);
    expect(entry).toMatchObject({ type: 'batch', accessor: '', policies: ['default', 'ops'], renewable: false, num_uses: 0, namespace_path: '' });
    const data = tokens.lookupResponse(entry as TokenEntryView, auth.client_token);
    expect(data).toMatchObject({ type: 'batch', accessor: '', id: auth.client_token, renewable: false, ttl: 3600 });
  });

  it('refuses what a batch token cannot be, as Vault words it, and writes nothing', async () => {
    const { store, tokens, rootView } = await setup();
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'batch', policies: ['root'] }, 'batch tokens cannot be root tokens'],
      [{ type: 'batch', num_uses: 3 }, 'batch tokens cannot have "num_uses" set'],
      [{ type: 'batch', explicit_max_ttl: '1h' }, 'batch tokens cannot have "explicit_max_ttl" set'],
      [{ type: 'batch', id: 'mine' }, 'batch tokens cannot have "id" set'],
      [{ type: 'weird' }, "invalid 'token_type' value"],
    ];
    for (const [req, message] of cases) {
      const err = await tokens.create(rootView, { policies: ['ops'], ...req }, '').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidRequest);
      expect((err as InvalidRequest).messages).toEqual([message]);
    }
    expect(store.commits).toHaveLength(1); // the root token only
  });

  it('cannot create child tokens', async () => {
    const { tokens, rootView } = await setup();
    const auth = await tokens.create(rootView, { type: 'batch', policies: ['ops'] }, '');
    const batch = (await tokens.lookup(auth.client_token)) as TokenEntryView;
    await expect(tokens.create(batch, { policies: ['ops'] }, '')).rejects.toThrow('batch tokens cannot create more tokens');
  });

  it('expire at their TTL, and a non-orphan dies with its parent', async () => {
    const { clock, tokens, rootView } = await setup();
    const parent = await tokens.create(rootView, { policies: ['ops'], ttl: '2h' }, '');
    const parentView = (await tokens.lookup(parent.client_token)) as TokenEntryView;
    const child = await tokens.create(parentView, { type: 'batch', ttl: '1h' }, '');
    expect(await tokens.lookup(child.client_token)).toBeDefined();
    clock.ms += 3600_000 - 1;
    expect(await tokens.lookup(child.client_token)).toBeDefined();
    clock.ms += 1;
    expect(await tokens.lookup(child.client_token)).toBeUndefined();
    await expect(tokens.validateForUse(child.client_token)).rejects.toThrow('permission denied');

    clock.ms = T0;
    const second = await tokens.create(parentView, { type: 'batch', ttl: '1h' }, '');
    expect(await tokens.lookup(second.client_token)).toBeDefined();
    await tokens.revoke(parent.client_token);
    expect(await tokens.lookup(second.client_token)).toBeUndefined();
  });

  it('refuses an altered token, a token of another key, and garbage', async () => {
    const { tokens, rootView } = await setup();
    const t = (await tokens.create(rootView, { type: 'batch', policies: ['ops'] }, '')).client_token;
    const body = t.slice(4);
    // One character changed anywhere: salt, nonce, sealed claims, tag.
    for (const at of [3, 30, Math.floor(body.length / 2), body.length - 4]) {
      const flipped = `hvb.${body.slice(0, at)}${body[at] === 'A' ? 'B' : 'A'}${body.slice(at + 1)}`;
      expect(await tokens.lookup(flipped)).toBeUndefined();
    }
    expect(await tokens.lookup(t)).toBeDefined();
    const other = await setup();
    expect(await other.tokens.lookup(t)).toBeUndefined(); // no key at all there
    await other.tokens.create(other.rootView, { type: 'batch', policies: ['x'] }, '');
    expect(await other.tokens.lookup(t)).toBeUndefined(); // another key
    for (const junk of ['hvb.', 'hvb.!!!', 'hvb.AAAA', `hvb.${'A'.repeat(20_000)}`]) expect(await tokens.lookup(junk)).toBeUndefined();
  });

  it('stay within their namespace: unknown to lookups and revocations from a sibling', async () => {
    const { tokens, rootView } = await setup();
    const t = (await tokens.create(rootView, { type: 'batch', policies: ['ops'] }, 'team/')).client_token;
    expect((await tokens.lookup(t, 'team/'))?.namespace_path).toBe('team/');
    expect(await tokens.lookup(t, 'other/')).toBeUndefined();
    expect(await tokens.revoke(t, 'other/')).toBe(false);
    expect(await tokens.lookup(t, 'team/')).toBeDefined();
  });

  it('revoke puts the token on the replicated deny list until it expires; later denials prune it', async () => {
    const { clock, store, tokens, rootView } = await setup();
    const a = (await tokens.create(rootView, { type: 'batch', policies: ['ops'], ttl: '1h' }, '')).client_token;
    expect(await tokens.revoke(a)).toBe(true);
    expect(await tokens.lookup(a)).toBeUndefined();
    const denied = [...store.data.keys()].filter((k) => k.startsWith(BATCH_DENY_PREFIX));
    expect(denied).toHaveLength(1);
    expect(classify(denied[0] as string)).toBe('replicated');
    expect(JSON.stringify([...store.data.keys()])).not.toContain(a.slice(4, 40)); // only a hash is kept
    // Revoking it again writes nothing (it no longer verifies).
    const commits = store.commits.length;
    expect(await tokens.revoke(a)).toBe(false);
    expect(store.commits.length).toBe(commits);
    // Past a's expiry, the next denial removes a's entry in the same commit.
    clock.ms += 3600_000;
    const b = (await tokens.create(rootView, { type: 'batch', policies: ['ops'], ttl: '1h' }, '')).client_token;
    await tokens.revoke(b);
    expect([...store.data.keys()].filter((k) => k.startsWith(BATCH_DENY_PREFIX))).toHaveLength(1);
    expect(store.commits.at(-1)?.map((op) => op.type).sort()).toEqual(['del', 'put']);
  });

  it('makes the key once even when the first mints race', async () => {
    const { store, tokens, rootView } = await setup();
    const minted = await Promise.all([1, 2, 3, 4].map(() => tokens.create(rootView, { type: 'batch', policies: ['ops'] }, '')));
    expect(store.commits.filter((ops) => ops.some((op) => op.key === BATCH_KEY_RECORD))).toHaveLength(1);
    for (const auth of minted) expect(await tokens.lookup(auth.client_token)).toBeDefined();
  });

  it('rotate the key daily: old tokens verify until they expire, keys past every token they sealed are dropped', async () => {
    const { clock, store, tokens, rootView } = await setup();
    const ring = (): number[] => JSON.parse(store.data.get(BATCH_KEY_RECORD)!.toString('utf8')).keys.map((k: { id: number }) => k.id);
    const day = 24 * 3600 * 1000;
    const first = (await tokens.create(rootView, { type: 'batch', policies: ['ops'], ttl: '768h' }, '')).client_token;
    expect(ring()).toEqual([1]);
    clock.ms += day - 1;
    await tokens.create(rootView, { type: 'batch', policies: ['ops'] }, '');
    expect(ring()).toEqual([1]);
    clock.ms += 1;
    const second = (await tokens.create(rootView, { type: 'batch', policies: ['ops'], ttl: '1h' }, '')).client_token;
    expect(ring()).toEqual([1, 2]);
    expect(first).not.toEqual(second);
    expect(await tokens.lookup(first)).toBeDefined();
    expect(await tokens.lookup(second)).toBeDefined();
    // Key 1 is kept while a token it sealed can live (768 h after key 2 was made), then dropped.
    for (let d = 0; d < 33; d++) {
      clock.ms += day;
      await tokens.create(rootView, { type: 'batch', policies: ['ops'] }, '');
    }
    expect(ring()[0]).toBeGreaterThan(1);
    expect(ring().length).toBeLessThanOrEqual(34);
    expect(await tokens.lookup(first)).toBeUndefined();
  });

  it('a token of the first format (no key id) still opens under a ring that began as the first key record', async () => {
    const { clock, store, tokens, rootView } = await setup();
    const auth = await tokens.create(rootView, { type: 'batch', policies: ['ops'], ttl: '48h' }, '');
    // Rewrite what the first format made: a one-key record and a token without a key id.
    const ringRec = JSON.parse(store.data.get(BATCH_KEY_RECORD)!.toString('utf8'));
    const k = ringRec.keys[0];
    await store.commit([{ type: 'put', key: BATCH_KEY_RECORD, value: Buffer.from(JSON.stringify({ version: 1, key: k.key, created_at: k.created_at })) }]);
    const blob = Buffer.from(auth.client_token.slice(4), 'base64url');
    const v1 = 'hvb.' + Buffer.concat([Buffer.from([1]), blob.subarray(5)]).toString('base64url');
    expect(await tokens.lookup(v1)).toMatchObject({ type: 'batch', policies: ['default', 'ops'] });
    clock.ms += 25 * 3600 * 1000;
    await tokens.create(rootView, { type: 'batch', policies: ['ops'] }, '');
    expect(JSON.parse(store.data.get(BATCH_KEY_RECORD)!.toString('utf8')).keys.map((x: { id: number }) => x.id)).toEqual([0, 1]);
    expect(await tokens.lookup(v1)).toBeDefined();
  });
});
