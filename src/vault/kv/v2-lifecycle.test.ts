import { InvalidRequest, NotFound } from '../../core/errors.js';
import { MapStore } from '../../storage/store.js';
import type { LogicalResponse, Operation } from '../logical.js';
import { NotFoundWithData, createKvEngine } from './index.js';

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
const rejection = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);
const versionKeys = (store: MapStore) => [...store.data.keys()].filter((k) => k.startsWith('versions/')).sort();

describe('KV v2 version lifecycle', () => {
  it('soft-deletes the latest version on DELETE data/, answering 404 with the metadata', async () => {
    const { put, call, advance } = setup();
    await put('k', { v: 1 });
    await put('k', { v: 2 });
    advance(1000);
    await expect(call('delete', 'data/k')).resolves.toBeNull();
    const err = await rejection(call('read', 'data/k'));
    expect(err).toBeInstanceOf(NotFound);
    expect(err).toBeInstanceOf(NotFoundWithData);
    expect((err as NotFoundWithData).data).toEqual({
      data: null,
      metadata: {
        created_time: '2024-05-01T10:00:00Z',
        custom_metadata: null,
        deletion_time: '2024-05-01T10:00:01Z',
        destroyed: false,
        version: 2,
      },
    });
    expect(body(await call('read', 'data/k', { version: 1 })).data).toEqual({ v: 1 });
    // Deleting again keeps the first deletion time.
    advance(1000);
    await call('delete', 'data/k');
    expect(body(await call('read', 'metadata/k')).versions).toMatchObject({ '2': { deletion_time: '2024-05-01T10:00:01Z' } });
    await expect(call('delete', 'data/never')).resolves.toBeNull();
  });

  it('delete/ and undelete/ toggle chosen versions; the data survives', async () => {
    const { put, call } = setup();
    for (let i = 1; i <= 3; i++) await put('k', { i });
    await expect(call('update', 'delete/k', { versions: [1, 3, 99] })).resolves.toBeNull();
    await expect(call('read', 'data/k', { version: '1' })).rejects.toBeInstanceOf(NotFound);
    await expect(call('read', 'data/k')).rejects.toBeInstanceOf(NotFound);
    expect(body(await call('read', 'data/k', { version: '2' })).data).toEqual({ i: 2 });

    await expect(call('update', 'undelete/k', { versions: ['3'] })).resolves.toBeNull();
    expect(body(await call('read', 'data/k'))).toMatchObject({ data: { i: 3 }, metadata: { deletion_time: '', version: 3 } });
    await expect(call('read', 'data/k', { version: '1' })).rejects.toBeInstanceOf(NotFound);
  });

  it('destroy/ removes the data for good; undelete cannot bring it back', async () => {
    const { put, call, store } = setup();
    await put('k', { secret: 'a' });
    await put('k', { secret: 'b' });
    await expect(call('update', 'destroy/k', { versions: [1] })).resolves.toBeNull();
    expect(versionKeys(store)).toEqual(['versions/k/0000000000000002']);
    const err = await rejection(call('read', 'data/k', { version: 1 }));
    expect((err as NotFoundWithData).data).toMatchObject({ data: null, metadata: { destroyed: true, version: 1 } });
    await call('update', 'undelete/k', { versions: [1] });
    await expect(call('read', 'data/k', { version: 1 })).rejects.toBeInstanceOf(NotFound);
    expect(body(await call('read', 'metadata/k')).versions).toMatchObject({ '1': { destroyed: true }, '2': { destroyed: false } });
    await expect(call('update', 'destroy/k', {})).rejects.toThrow('no version number provided');
    await expect(call('update', 'destroy/k', { versions: [1] })).resolves.toBeNull();
  });

  it('keeps 10 versions by default, dropping the oldest data and metadata (oldest_version as Vault)', async () => {
    const { put, call, store } = setup();
    for (let i = 1; i <= 10; i++) await put('k', { i });
    expect(body(await call('read', 'metadata/k'))).toMatchObject({ current_version: 10, oldest_version: 1 });
    for (let i = 11; i <= 12; i++) await put('k', { i });
    const meta = body(await call('read', 'metadata/k'));
    expect(meta).toMatchObject({ current_version: 12, oldest_version: 3 });
    expect(Object.keys(meta.versions as object)).toEqual(['3', '4', '5', '6', '7', '8', '9', '10', '11', '12']);
    expect(versionKeys(store)).toHaveLength(10);
    await expect(call('read', 'data/k', { version: 2 })).rejects.toBeInstanceOf(NotFound);
    expect(body(await call('read', 'data/k', { version: 3 })).data).toEqual({ i: 3 });
  });

  it('applies the greater of the mount and key max_versions, on the next write', async () => {
    const { put, call, store } = setup();
    for (let i = 1; i <= 6; i++) await put('k', { i });
    await call('update', 'metadata/k', { max_versions: 2 });
    expect(versionKeys(store)).toHaveLength(6); // not until the next write, as in Vault
    await put('k', { i: 7 });
    expect(versionKeys(store)).toEqual(['versions/k/0000000000000006', 'versions/k/0000000000000007']);
    expect(body(await call('read', 'metadata/k'))).toMatchObject({ oldest_version: 6, max_versions: 2 });

    await call('update', 'config', { max_versions: 4 });
    for (let i = 8; i <= 10; i++) await put('k', { i });
    expect(Object.keys(body(await call('read', 'metadata/k')).versions as object)).toEqual(['7', '8', '9', '10']);
  });

  it('delete_version_after schedules deletion; the smaller non-zero of mount and key wins', async () => {
    const { put, call, advance } = setup();
    await call('update', 'config', { delete_version_after: '1h' });
    await call('update', 'metadata/k', { delete_version_after: '30m' });
    expect(body(await put('k', { a: 1 }))).toMatchObject({ deletion_time: '2024-05-01T10:30:00Z' });
    expect(body(await put('other', { a: 1 }))).toMatchObject({ deletion_time: '2024-05-01T11:00:00Z' });
    expect(body(await call('read', 'data/k')).data).toEqual({ a: 1 });
    advance(30 * 60 * 1000);
    await expect(call('read', 'data/k')).rejects.toBeInstanceOf(NotFound);
    await call('update', 'undelete/k', { versions: [1] });
    expect(body(await call('read', 'data/k')).metadata).toMatchObject({ deletion_time: '2024-05-01T11:00:00Z' });

    await call('update', 'config', { delete_version_after: -1 });
    expect(body(await call('read', 'config')).delete_version_after).toBe('-1s');
    expect(body(await put('k', { a: 2 }))).toMatchObject({ deletion_time: '' });
    await call('update', 'config', { delete_version_after: 0 });
    expect(body(await call('read', 'config')).delete_version_after).toBe('0s');
  });

  it('names the empty versions list as Vault does', async () => {
    const { put, call } = setup();
    await put('k', { a: 1 });
    await expect(call('update', 'delete/k', { versions: [] })).rejects.toThrow('No version number provided');
    await expect(call('update', 'undelete/k', {})).rejects.toBeInstanceOf(InvalidRequest);
  });
});
