import { InvalidRequest, NotFound, UnsupportedOperation } from '../../core/errors.js';
import { MapStore } from '../../storage/store.js';
import type { LogicalResponse, Operation } from '../logical.js';
import { createKvEngine } from './index.js';

function setup() {
  let t = Date.parse('2024-05-01T10:00:00.000Z');
  const store = new MapStore();
  const engine = createKvEngine({ version: 2, now: () => new Date(t) });
  const call = (operation: Operation, path: string, data: Record<string, unknown> = {}) =>
    engine.handle({ operation, path, data }, store);
  const put = (p: string, data: unknown) => call('update', `data/${p}`, { data });
  return { store, call, put, advance: (ms: number) => (t += ms) };
}

const body = (r: LogicalResponse | null) => r?.data as Record<string, unknown>;

describe('KV v2 metadata/ and config', () => {
  it('reads metadata field for field as Vault', async () => {
    const { put, call, advance } = setup();
    await put('app/db', { a: 1 });
    advance(500);
    await put('app/db', { a: 2 });
    await expect(call('read', 'metadata/app/db')).resolves.toEqual({
      data: {
        cas_required: false,
        created_time: '2024-05-01T10:00:00Z',
        current_version: 2,
        custom_metadata: null,
        delete_version_after: '0s',
        max_versions: 0,
        oldest_version: 0,
        updated_time: '2024-05-01T10:00:00.5Z',
        versions: {
          '1': { created_time: '2024-05-01T10:00:00Z', deletion_time: '', destroyed: false },
          '2': { created_time: '2024-05-01T10:00:00.5Z', deletion_time: '', destroyed: false },
        },
      },
    });
    await expect(call('read', 'metadata/nope')).rejects.toBeInstanceOf(NotFound);
  });

  it('writes metadata before any version; custom_metadata appears in data responses', async () => {
    const { put, call } = setup();
    await expect(call('update', 'metadata/k', { custom_metadata: { owner: 'ops' }, delete_version_after: '1h30m' })).resolves.toBeNull();
    expect(body(await call('read', 'metadata/k'))).toMatchObject({
      current_version: 0,
      versions: {},
      custom_metadata: { owner: 'ops' },
      delete_version_after: '1h30m0s',
    });
    await expect(call('read', 'data/k')).rejects.toBeInstanceOf(NotFound);
    expect(body(await put('k', { a: 1 }))).toMatchObject({ version: 1, custom_metadata: { owner: 'ops' } });
    // A write with no known field is a no-op and creates nothing.
    await expect(call('update', 'metadata/empty', { unknown: 1 })).resolves.toBeNull();
    await expect(call('read', 'metadata/empty')).rejects.toBeInstanceOf(NotFound);
  });

  it('warns when a key turns cas_required off but the mount mandates it', async () => {
    const { call } = setup();
    await call('update', 'config', { cas_required: true });
    const res = await call('update', 'metadata/k', { cas_required: false });
    expect(res?.warnings).toEqual([
      '"cas_required" set to false, but is mandated by backend config. This value will be ignored.',
    ]);
  });

  it('patches metadata: scalars replace, custom_metadata merges and null removes', async () => {
    const { call, put } = setup();
    await expect(call('patch', 'metadata/k', { max_versions: 3 })).rejects.toBeInstanceOf(NotFound);
    await put('k', { a: 1 });
    await call('update', 'metadata/k', { custom_metadata: { a: '1', b: '2' } });
    await call('patch', 'metadata/k', { max_versions: 3, custom_metadata: { a: null, c: '3' } });
    expect(body(await call('read', 'metadata/k'))).toMatchObject({ max_versions: 3, custom_metadata: { b: '2', c: '3' } });
    // A full write replaces custom_metadata instead.
    await call('update', 'metadata/k', { custom_metadata: { z: '26' } });
    expect(body(await call('read', 'metadata/k')).custom_metadata).toEqual({ z: '26' });
  });

  it('deletes the key: every version and the metadata, leaving nothing in storage', async () => {
    const { put, call, store } = setup();
    for (let i = 0; i < 3; i++) await put('k', { i });
    await call('update', 'destroy/k', { versions: [2] });
    await put('keep', { x: 1 });
    await expect(call('delete', 'metadata/k')).resolves.toBeNull();
    expect([...store.data.keys()].sort()).toEqual(['meta/keep', 'versions/keep/0000000000000001']);
    await expect(call('read', 'metadata/k')).rejects.toBeInstanceOf(NotFound);
    await expect(call('read', 'data/k', { version: 1 })).rejects.toBeInstanceOf(NotFound);
    // The key starts again from version 1.
    expect(body(await put('k', { again: true }))).toMatchObject({ version: 1 });
    expect(body(await call('read', 'data/keep')).data).toEqual({ x: 1 });
  });

  it('lists keys at the root and in folders; empty is no keys (the HTTP layer answers 404)', async () => {
    const { put, call } = setup();
    await put('a', { v: 1 });
    await put('dir/b', { v: 1 });
    await put('dir/sub/c', { v: 1 });
    await expect(call('list', 'metadata/')).resolves.toEqual({ data: { keys: ['a', 'dir/'] } });
    await expect(call('list', 'metadata/dir/')).resolves.toEqual({ data: { keys: ['b', 'sub/'] } });
    await expect(call('list', 'metadata/dir')).resolves.toEqual({ data: { keys: ['b', 'sub/'] } });
    await expect(call('list', 'metadata/none/')).resolves.toEqual({ data: { keys: [] } });
    await call('delete', 'metadata/a');
    await expect(call('list', 'metadata/')).resolves.toEqual({ data: { keys: ['dir/'] } });
  });

  it('reads and writes config with Vault defaults', async () => {
    const { call } = setup();
    await expect(call('read', 'config')).resolves.toEqual({
      data: { cas_required: false, delete_version_after: '0s', max_versions: 0 },
    });
    await expect(call('update', 'config', { max_versions: 7, delete_version_after: '2h' })).resolves.toBeNull();
    await call('update', 'config', { cas_required: true });
    await expect(call('read', 'config')).resolves.toEqual({
      data: { cas_required: true, delete_version_after: '2h0m0s', max_versions: 7 },
    });
  });

  it('routes unknown and unsupported paths as Vault: 404 with its hint, 405 for a wrong verb', async () => {
    const { call, put } = setup();
    await put('k', { a: 1 });
    await expect(call('list', 'data/')).rejects.toThrow("use 'vault kv list' for this operation");
    await expect(call('list', '')).rejects.toBeInstanceOf(NotFound);
    await expect(call('read', 'secret-without-prefix')).rejects.toThrow("use 'vault kv get'");
    await expect(call('update', 'subkeys/k', {})).rejects.toThrow("use 'vault kv put'");
    await expect(call('read', 'data/')).rejects.toBeInstanceOf(NotFound);
    await expect(call('read', 'data/k/')).rejects.toBeInstanceOf(NotFound);
    await expect(call('read', 'constructor/k')).rejects.toBeInstanceOf(NotFound);
    await expect(call('read', 'metadata')).rejects.toThrow('Non-listing operations on the root');
    await expect(call('read', 'delete/k')).rejects.toBeInstanceOf(UnsupportedOperation);
    await expect(call('delete', 'config')).rejects.toBeInstanceOf(UnsupportedOperation);
    await expect(call('list', 'metadata/a//')).rejects.toBeInstanceOf(InvalidRequest);
  });
});
