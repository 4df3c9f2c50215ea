import { InvalidRequest, PermissionDenied, isTesseraError } from '../core/errors.js';
import { MapStore } from '../storage/store.js';
import { hashToken, tokenKeys } from './token-keys.js';
import { TokenStore } from './tokens.js';
import { Wrapping } from './wrapping.js';
import { SlowStore } from '../../test/support/slow-store.js';

const T0 = Date.UTC(2024, 4, 1, 12, 0, 0);
const INVALID = 'wrapping token is not valid or does not exist';

function setup() {
  const clock = { ms: T0 };
  const store = new SlowStore();
  const tokens = new TokenStore(store, { now: () => clock.ms });
  return { clock, store, tokens, wrapping: new Wrapping(tokens, store) };
}

async function expectInvalid(p: Promise<unknown>): Promise<void> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidRequest);
  expect(isTesseraError(err) ? err.messages : []).toEqual([INVALID]);
}

function wrapKeys(store: MapStore): string[] {
  return [...store.data.keys()].filter((k) => k.startsWith('local/wrap/'));
}

describe('Wrapping', () => {
  it('wraps under a single-use response-wrapping token and reports Vault\'s wrap_info', async () => {
    const { wrapping, tokens } = setup();
    const info = await wrapping.wrap({ data: { secret: 's3cr3t' } }, 300, 'sys/replication/dr/primary/secondary-token');
    expect(info).toEqual({
      token: expect.stringMatching(/^hvs\.[0-9A-Za-z]{24}$/),
      accessor: expect.stringMatching(/^[0-9A-Za-z]{24}$/),
      ttl: 300,
      creation_time: '2024-05-01T12:00:00Z',
      creation_path: 'sys/replication/dr/primary/secondary-token',
      wrapped_accessor: '',
    });
    expect(await tokens.lookup(info.token)).toMatchObject({
      policies: ['response-wrapping'],
      num_uses: 1,
      orphan: true,
      accessor: info.accessor,
    });
  });

  it('unwraps once, deleting token and response in one commit', async () => {
    const { wrapping, store, tokens } = setup();
    const info = await wrapping.wrap({ data: { secret: 's3cr3t' }, warnings: ['w'] }, 300, 'sys/wrapping/wrap');
    const before = store.commits.length;
    await expect(wrapping.unwrap(info.token)).resolves.toEqual({ data: { secret: 's3cr3t' }, warnings: ['w'] });
    expect(store.commits.length - before).toBe(1);
    const keys = store.commits[store.commits.length - 1]?.map((op) => `${op.type} ${op.key}`);
    const hash = hashToken(info.token);
    expect(keys).toEqual(expect.arrayContaining([`del ${tokenKeys.entry(hash)}`, `del ${tokenKeys.wrap(hash)}`]));
    expect(wrapKeys(store)).toEqual([]);
    expect(await tokens.lookup(info.token)).toBeUndefined();
    await expectInvalid(wrapping.unwrap(info.token));
  });

  it('hands the response to exactly one of many concurrent unwraps', async () => {
    const { wrapping } = setup();
    const info = await wrapping.wrap({ data: { n: 1 } }, 60, 'sys/wrapping/wrap');
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => wrapping.unwrap(info.token)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('refuses an expired wrapping token, and tidy drops its response', async () => {
    const { wrapping, clock, store, tokens } = setup();
    const info = await wrapping.wrap({ data: { a: 1 } }, 60, 'sys/wrapping/wrap');
    clock.ms += 60_000;
    await expectInvalid(wrapping.unwrap(info.token));
    await expectInvalid(wrapping.lookup(info.token));
    expect(wrapKeys(store)).toHaveLength(1);
    await expect(tokens.tidy()).resolves.toBe(1);
    expect(wrapKeys(store)).toEqual([]);
  });

  it('looks up without consuming', async () => {
    const { wrapping, clock } = setup();
    const info = await wrapping.wrap({ data: { a: 1 } }, 120, 'sys/wrapping/wrap');
    clock.ms += 30_000;
    const want = { creation_path: 'sys/wrapping/wrap', creation_time: '2024-05-01T12:00:00Z', creation_ttl: 120 };
    await expect(wrapping.lookup(info.token)).resolves.toEqual(want);
    await expect(wrapping.lookup(info.token)).resolves.toEqual(want);
    await expect(wrapping.unwrap(info.token)).resolves.toEqual({ data: { a: 1 } });
  });

  it('refuses to unwrap a token that is not a wrapping token, and leaves it usable', async () => {
    const { wrapping, tokens } = setup();
    const { token } = await tokens.createRoot();
    await expectInvalid(wrapping.unwrap(token));
    await expectInvalid(wrapping.lookup(token));
    await expectInvalid(wrapping.unwrap('hvs.unknown'));
    await expect(tokens.validateForUse(token)).resolves.toMatchObject({ policies: ['root'] });
  });

  it('stores a wrapped token only sealed, and names its accessor', async () => {
    const { wrapping, tokens, store } = setup();
    const root = await tokens.createRoot();
    const rootView = await tokens.lookup(root.token);
    if (rootView === undefined) throw new Error('no root');
    const auth = await tokens.create(rootView, { policies: ['app'] }, '');
    const info = await wrapping.wrap({ data: null, auth }, 300, 'auth/token/create');
    expect(info.wrapped_accessor).toBe(auth.accessor);
    for (const [key, value] of store.data) {
      for (const secret of [auth.client_token, info.token, root.token]) {
        expect(key).not.toContain(secret);
        expect(value.toString('utf8')).not.toContain(secret);
      }
      expect(value.toString('utf8')).not.toContain('client_token');
    }
    await expect(wrapping.unwrap(info.token)).resolves.toEqual({ data: null, auth: { ...auth } });
  });

  it('lets the caller choose the wrapping token, once', async () => {
    const { wrapping } = setup();
    const info = await wrapping.wrap({ data: { a: 1 } }, 60, 'p', { id: 'jti-abcdefghijklmnop' });
    expect(info.token).toBe('jti-abcdefghijklmnop');
    await expect(wrapping.wrap({ data: { b: 2 } }, 60, 'p', { id: 'jti-abcdefghijklmnop' })).rejects.toThrow(
      InvalidRequest,
    );
    await expect(wrapping.unwrap('jti-abcdefghijklmnop')).resolves.toEqual({ data: { a: 1 } });
  });

  it('rejects a non-positive or fractional ttl', async () => {
    const { wrapping, store } = setup();
    for (const ttl of [0, -5, 1.5]) await expect(wrapping.wrap({ data: {} }, ttl, 'p')).rejects.toThrow(InvalidRequest);
    expect(store.data.size).toBe(0);
  });

  it('binds a stored response to its own token', async () => {
    const { wrapping, store } = setup();
    const a = await wrapping.wrap({ data: { who: 'a' } }, 60, 'p');
    const b = await wrapping.wrap({ data: { who: 'b' } }, 60, 'p');
    const bRecord = store.data.get(tokenKeys.wrap(hashToken(b.token)));
    if (bRecord === undefined) throw new Error('no record');
    store.data.set(tokenKeys.wrap(hashToken(a.token)), bRecord);
    const err: unknown = await wrapping.unwrap(a.token).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isTesseraError(err) && err.code).toBe('internal');
    await expect(wrapping.unwrap(b.token)).resolves.toEqual({ data: { who: 'b' } });
  });

  it('drops the response when the wrapping token is revoked by accessor', async () => {
    const { wrapping, tokens, store } = setup();
    const info = await wrapping.wrap({ data: { a: 1 } }, 60, 'p');
    await expect(tokens.revokeAccessor(info.accessor)).resolves.toBe(true);
    expect(wrapKeys(store)).toEqual([]);
    await expectInvalid(wrapping.unwrap(info.token));
  });
});
