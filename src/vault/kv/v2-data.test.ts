import { InvalidRequest, NotFound, isTesseraError } from '../../core/errors.js';
import { MapStore, type Op } from '../../storage/store.js';
import type { LogicalResponse, Operation } from '../logical.js';
import { createKvEngine } from './index.js';

class RecordingStore extends MapStore {
  readonly commits: (readonly Op[])[] = [];
  override async commit(ops: readonly Op[]): Promise<void> {
    this.commits.push(ops);
    return super.commit(ops);
  }
}

function setup() {
  let t = Date.parse('2024-05-01T10:00:00.000Z');
  const store = new RecordingStore();
  const engine = createKvEngine({ version: 2, now: () => new Date(t) });
  const call = (operation: Operation, path: string, data: Record<string, unknown> = {}) =>
    engine.handle({ operation, path, data }, store);
  const put = (p: string, data: unknown, options?: unknown) =>
    call('update', `data/${p}`, options === undefined ? { data } : { data, options });
  return { store, call, put, advance: (ms: number) => (t += ms) };
}

const body = (r: LogicalResponse | null) => r?.data as Record<string, unknown>;

describe('KV v2 data/', () => {
  it('answers a write and a read field for field as Vault', async () => {
    const { put, call } = setup();
    await expect(put('app/db', { password: 's3cret' })).resolves.toEqual({
      data: {
        created_time: '2024-05-01T10:00:00Z',
        custom_metadata: null,
        deletion_time: '',
        destroyed: false,
        version: 1,
      },
    });
    await expect(call('read', 'data/app/db')).resolves.toEqual({
      data: {
        data: { password: 's3cret' },
        metadata: {
          created_time: '2024-05-01T10:00:00Z',
          custom_metadata: null,
          deletion_time: '',
          destroyed: false,
          version: 1,
        },
      },
    });
  });

  it('keeps every version readable by number; the latest by default', async () => {
    const { put, call, advance } = setup();
    await put('k', { v: 'one' });
    advance(1_250);
    const second = await put('k', { v: 'two' });
    expect(body(second)).toMatchObject({ version: 2, created_time: '2024-05-01T10:00:01.25Z' });
    expect(body(await call('read', 'data/k'))).toMatchObject({ data: { v: 'two' }, metadata: { version: 2 } });
    expect(body(await call('read', 'data/k', { version: '1' }))).toMatchObject({ data: { v: 'one' }, metadata: { version: 1 } });
    expect(body(await call('read', 'data/k', { version: '0' }))).toMatchObject({ metadata: { version: 2 } });
    await expect(call('read', 'data/k', { version: '3' })).rejects.toBeInstanceOf(NotFound);
    await expect(call('read', 'data/missing')).rejects.toBeInstanceOf(NotFound);
  });

  it('commits the version and its metadata together, once per write', async () => {
    const { put, store } = setup();
    await put('k', { a: 1 });
    expect(store.commits).toHaveLength(1);
    expect(store.commits[0]!.map((op) => `${op.type} ${op.key}`)).toEqual(['put versions/k/0000000000000001', 'put meta/k']);
  });

  it('check-and-set: 0 means create-only, n must equal the current version', async () => {
    const { put } = setup();
    expect(body(await put('k', { a: 1 }, { cas: 0 }))).toMatchObject({ version: 1 });
    const again = put('k', { a: 2 }, { cas: 0 });
    await expect(again).rejects.toBeInstanceOf(InvalidRequest);
    await expect(again).rejects.toThrow('check-and-set parameter did not match the current version');
    expect(body(await put('k', { a: 2 }, { cas: '1' }))).toMatchObject({ version: 2 });
    await expect(put('k', { a: 3 }, { cas: 1 })).rejects.toThrow('did not match');
    await expect(put('k', { a: 3 }, { cas: 'one' })).rejects.toThrow('error parsing check-and-set parameter');
  });

  it('requires cas when the mount or the key says so', async () => {
    const { put, call } = setup();
    await call('update', 'config', { cas_required: 'true' });
    await expect(put('k', { a: 1 })).rejects.toThrow('check-and-set parameter required for this call');
    expect(body(await put('k', { a: 1 }, { cas: 0 }))).toMatchObject({ version: 1 });

    await call('update', 'config', { cas_required: false });
    await call('update', 'metadata/other', { cas_required: true });
    await expect(put('other', { a: 1 })).rejects.toBeInstanceOf(InvalidRequest);
    expect(body(await put('other', { a: 1 }, { cas: 0 }))).toMatchObject({ version: 1 });
    expect(body(await put('k', { a: 2 }))).toMatchObject({ version: 2 });
  });

  it('serialises concurrent writers: with cas exactly one wins, without cas versions are distinct', async () => {
    const { put, call } = setup();
    const racers = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => put('race', { i }, { cas: 0 })));
    expect(racers.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => put('free', { i })));
    expect(results.map((r) => body(r).version).sort((a, b) => Number(a) - Number(b))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(body(await call('read', 'metadata/free')).current_version).toBe(8);
  });

  it('patch merges into the latest version as a JSON merge patch, honouring cas', async () => {
    const { put, call } = setup();
    await put('k', { keep: 'x', drop: 'y', nested: { a: 1, b: 2 } });
    const patched = await call('patch', 'data/k', { data: { drop: null, nested: { b: null, c: 3 }, added: true } });
    expect(body(patched)).toMatchObject({ version: 2, destroyed: false, deletion_time: '' });
    expect(body(await call('read', 'data/k')).data).toEqual({ keep: 'x', nested: { a: 1, c: 3 }, added: true });
    await expect(call('patch', 'data/k', { data: { x: 1 }, options: { cas: 1 } })).rejects.toThrow('did not match');
    await expect(call('patch', 'data/missing', { data: { x: 1 } })).rejects.toBeInstanceOf(NotFound);
    await expect(call('patch', 'data/k', {})).rejects.toThrow('no data provided');
  });

  it('patch refuses a deleted latest version with a 404 that carries its metadata', async () => {
    const { put, call } = setup();
    await put('k', { a: 1 });
    await call('delete', 'data/k');
    const err: unknown = await call('patch', 'data/k', { data: { a: 2 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFound);
    expect((err as { data?: unknown }).data).toMatchObject({ version: 1, deletion_time: '2024-05-01T10:00:00Z' });
  });

  it('accepts the data map as a JSON string and stores an empty map', async () => {
    const { call } = setup();
    await call('update', 'data/s', { data: '{"a":"b"}' });
    expect(body(await call('read', 'data/s')).data).toEqual({ a: 'b' });
    await call('update', 'data/e', { data: {} });
    expect(body(await call('read', 'data/e')).data).toEqual({});
  });

  it('rejects every bad input with InvalidRequest, never a plain Error', async () => {
    const { put, call } = setup();
    await put('k', { a: 1 });
    const bad: [Operation, string, Record<string, unknown>][] = [
      ['update', 'data/k', {}],
      ['update', 'data/k', { data: null }],
      ['update', 'data/k', { data: 'not json' }],
      ['update', 'data/k', { data: [1, 2] }],
      ['update', 'data/k', { data: 5 }],
      ['update', 'data/k', { data: {}, options: 'x' }],
      ['update', 'data/k', { data: {}, options: { cas: 1.5 } }],
      ['update', 'data/a//b', { data: {} }],
      ['update', 'data/../b', { data: {} }],
      ['read', 'data/k', { version: 'two' }],
      ['read', 'data/k', { version: '1e3' }],
      ['patch', 'data/k', { data: 'x' }],
      ['update', 'config', { max_versions: 'ten' }],
      ['update', 'config', { max_versions: -1 }],
      ['update', 'config', { cas_required: 'maybe' }],
      ['update', 'config', { delete_version_after: '5 fortnights' }],
      ['update', 'metadata/k', { max_versions: '2.5' }],
      ['update', 'metadata/k', { delete_version_after: '-1h' }],
      ['update', 'metadata/k', { custom_metadata: { a: { nested: 1 } } }],
      ['update', 'metadata/k', { custom_metadata: { '': 'v' } }],
      ['update', 'metadata/k', { custom_metadata: { k: 'x'.repeat(513) } }],
      ['update', 'metadata/k', { custom_metadata: { k: 'tab\there' } }],
      ['update', 'metadata/k', { custom_metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }],
      ['update', 'delete/k', {}],
      ['update', 'delete/k', { versions: 'a,b' }],
      ['update', 'undelete/k', { versions: [] }],
      ['update', 'destroy/k', { versions: [{}] }],
    ];
    for (const [operation, path, data] of bad) {
      const err: unknown = await call(operation, path, data).then(
        () => new Error(`accepted: ${operation} ${path} ${JSON.stringify(data)}`),
        (e: unknown) => e,
      );
      if (!(err instanceof InvalidRequest)) throw err;
      expect(isTesseraError(err) && err.messages.length).toBeGreaterThan(0);
    }
  });

  it('takes string-typed scalars as `vault write k=v` sends them', async () => {
    const { put, call } = setup();
    await call('update', 'config', { max_versions: '3', cas_required: 'false', delete_version_after: '90' });
    expect(body(await call('read', 'config'))).toEqual({ max_versions: 3, cas_required: false, delete_version_after: '1m30s' });
    await put('k', { a: 1 });
    await call('update', 'metadata/k', { max_versions: '5', cas_required: 'TRUE', custom_metadata: { n: 1, b: true } });
    const meta = body(await call('read', 'metadata/k'));
    expect(meta).toMatchObject({ max_versions: 5, cas_required: true, custom_metadata: { n: '1', b: '1' } });
    expect(body(await put('k', { a: 2 }, { cas: '1' }))).toMatchObject({ version: 2, custom_metadata: { n: '1', b: '1' } });
    await call('update', 'delete/k', { versions: '1,2' });
    await expect(call('read', 'data/k')).rejects.toBeInstanceOf(NotFound);
  });
});
