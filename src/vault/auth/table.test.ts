/** The auth table's storage layout: one key per mount (what a paths filter needs), legacy arrays migrated. */
import { MapStore } from '../../storage/store.js';
import { AuthTable, readAuthTable, type AuthEntry } from './table.js';

function keys(store: MapStore): string[] {
  return [...store.data.keys()].filter((k) => k.includes('core/auth')).sort();
}

function legacyEntry(path: string, uuid: string, local = false): AuthEntry {
  return { path, namespace: '', type: 'userpass', description: '', accessor: `auth_userpass_${uuid}`, uuid, local, seal_wrap: false, options: {}, config: { default_lease_ttl: 0, max_lease_ttl: 0 } };
}

describe('AuthTable storage layout', () => {
  it('stores each auth mount under its own key, by class, and removes it on disable', async () => {
    const store = new MapStore();
    const table = new AuthTable(() => store);
    const a = await table.enable('', 'userpass/', { type: 'userpass' });
    const b = await table.enable('team/', 'approle/', { type: 'approle', local: true });
    expect(keys(store)).toEqual([`core/auth/${a.uuid}`, `local/core/auth/${b.uuid}`]);
    expect(JSON.parse(store.data.get(`core/auth/${a.uuid}`)!.toString())).toEqual(a);
    expect((await table.resolve('', 'userpass/login/bob'))?.entry.uuid).toBe(a.uuid);
    await table.remove('', 'userpass/');
    expect(keys(store)).toEqual([`local/core/auth/${b.uuid}`]);
    expect((await table.list('team/')).map((e) => e.uuid)).toEqual([b.uuid]);
  });

  it('reads a legacy array table and moves it to per-mount keys in the first write of its class', async () => {
    const store = new MapStore();
    store.data.set('core/auth', Buffer.from(JSON.stringify([legacyEntry('old/', 'u1'), legacyEntry('older/', 'u2')])));
    store.data.set('local/core/auth', Buffer.from(JSON.stringify([legacyEntry('mine/', 'u3', true)])));
    const table = new AuthTable(() => store);
    expect((await table.list('')).map((e) => e.path)).toEqual(['mine/', 'old/', 'older/']);
    expect((await readAuthTable(store, false)).legacy).toBe(true);
    // A disable of a legacy mount migrates the others and drops it, in one commit.
    await table.remove('', 'old/');
    expect(keys(store)).toEqual(['core/auth/u2', 'local/core/auth']);
    await table.migrateLegacyTables();
    expect(keys(store)).toEqual(['core/auth/u2', 'local/core/auth/u3']);
    expect((await table.list('')).map((e) => e.path)).toEqual(['mine/', 'older/']);
    // Nothing left to migrate: no commit.
    const before = new Map(store.data);
    await table.migrateLegacyTables();
    expect(store.data).toEqual(before);
  });
});
