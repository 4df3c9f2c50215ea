import { InvalidRequest, NotFound, UnsupportedOperation } from '../../core/errors.js';
import { MapStore, ScopedStore } from '../../storage/store.js';
import type { Operation } from '../logical.js';
import { createKvEngine } from './index.js';

function setup() {
  const store = new MapStore();
  const engine = createKvEngine({ version: 1 });
  const call = (operation: Operation, path: string, data: Record<string, unknown> = {}) =>
    engine.handle({ operation, path, data }, store);
  return { store, call };
}

describe('KV v1', () => {
  it('writes, reads, overwrites and deletes a secret; the whole body is the secret', async () => {
    const { call, store } = setup();
    await expect(call('create', 'app/db', { user: 'u', port: 5432, nested: { a: [1, 2] } })).resolves.toBeNull();
    expect(JSON.parse(store.data.get('app/db')!.toString())).toEqual({ user: 'u', port: 5432, nested: { a: [1, 2] } });
    await expect(call('read', 'app/db')).resolves.toEqual({ data: { user: 'u', port: 5432, nested: { a: [1, 2] } } });

    await call('update', 'app/db', { only: 'this' });
    await expect(call('read', 'app/db')).resolves.toEqual({ data: { only: 'this' } });

    await expect(call('delete', 'app/db')).resolves.toBeNull();
    await expect(call('read', 'app/db')).rejects.toBeInstanceOf(NotFound);
    await expect(call('delete', 'app/db')).resolves.toBeNull(); // deleting nothing is fine, as in Vault
  });

  it('lists direct children with sub-folders once and a trailing slash; empty is no keys (the HTTP layer answers 404)', async () => {
    const { call } = setup();
    await call('create', 'a', { v: 1 });
    await call('create', 'dir/b', { v: 1 });
    await call('create', 'dir/c/d', { v: 1 });
    await expect(call('list', '')).resolves.toEqual({ data: { keys: ['a', 'dir/'] } });
    await expect(call('list', 'dir/')).resolves.toEqual({ data: { keys: ['b', 'c/'] } });
    await expect(call('list', 'dir')).resolves.toEqual({ data: { keys: ['b', 'c/'] } });
    await expect(call('list', 'nothing/')).resolves.toEqual({ data: { keys: [] } });
  });

  it('works through a mount-scoped store without leaking outside the prefix', async () => {
    const base = new MapStore();
    const engine = createKvEngine({ version: 1 });
    await engine.handle({ operation: 'update', path: 'k', data: { x: 'y' } }, new ScopedStore(base, 'logical/m1/'));
    expect([...base.data.keys()]).toEqual(['logical/m1/k']);
  });

  it('refuses an empty body, bad paths and patch with typed errors', async () => {
    const { call } = setup();
    await expect(call('update', 'k', {})).rejects.toBeInstanceOf(InvalidRequest);
    for (const bad of ['', 'a//b', '../x', 'a/../b', 'trailing/', '/lead']) {
      await expect(call('update', bad, { v: 1 })).rejects.toBeInstanceOf(InvalidRequest);
    }
    await expect(call('list', 'a//')).rejects.toBeInstanceOf(InvalidRequest);
    await expect(call('patch', 'k', { v: 1 })).rejects.toBeInstanceOf(UnsupportedOperation);
  });
});
