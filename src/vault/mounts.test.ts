/** The mount table's storage layout: one key per mount (what a paths filter needs), legacy arrays migrated. */
import { MapStore } from '../storage/store.js';
import { Mounts, readMountTable, type MountEntry } from './mounts.js';

function keys(store: MapStore): string[] {
  return [...store.data.keys()].filter((k) => k.includes('core/mounts')).sort();
}

function legacyEntry(path: string, uuid: string, local = false): MountEntry {
  return {
    path, namespace: '', type: 'kv', description: '', accessor: `kv_${uuid}`, uuid, local, seal_wrap: false, options: { version: '2' },
    config: { default_lease_ttl: 0, max_lease_ttl: 0 },
  };
}

describe('Mounts storage layout', () => {
  it('stores each mount under its own key, by class, and removes it on disable', async () => {
    const store = new MapStore();
    const mounts = new Mounts(() => store);
    const a = await mounts.enable('', 'secret/', { type: 'kv' });
    const b = await mounts.enable('team/', 'db/', { type: 'kv', local: true });
    expect(keys(store)).toEqual([`core/mounts/${a.uuid}`, `local/core/mounts/${b.uuid}`]);
    expect(JSON.parse(store.data.get(`core/mounts/${a.uuid}`)!.toString())).toEqual(a);

    const tuned = await mounts.tune('', 'secret/', { description: 'x' });
    expect(JSON.parse(store.data.get(`core/mounts/${a.uuid}`)!.toString()).description).toBe('x');
    expect(tuned.description).toBe('x');

    await mounts.disable('', 'secret/');
    expect(keys(store)).toEqual([`local/core/mounts/${b.uuid}`]);
    const again = new Mounts(() => store);
    await again.load();
    expect(again.all().map((e) => e.uuid)).toEqual([b.uuid]);
  });

  it('reads a legacy array table and moves it to per-mount keys in the first write of its class', async () => {
    const store = new MapStore();
    store.data.set('core/mounts', Buffer.from(JSON.stringify([legacyEntry('old/', 'u1'), legacyEntry('older/', 'u2')])));
    store.data.set('local/core/mounts', Buffer.from(JSON.stringify([legacyEntry('mine/', 'u3', true)])));
    const mounts = new Mounts(() => store);
    await mounts.load();
    expect(mounts.all().map((e) => e.path).sort()).toEqual(['mine/', 'old/', 'older/']);

    const added = await mounts.enable('', 'new/', { type: 'kv' });
    expect(keys(store)).toEqual(['core/mounts/u1', 'core/mounts/u2', `core/mounts/${added.uuid}`, 'local/core/mounts'].sort());

    await mounts.migrateLegacyTables();
    expect(keys(store)).toEqual(['core/mounts/u1', 'core/mounts/u2', `core/mounts/${added.uuid}`, 'local/core/mounts/u3'].sort());
    const reloaded = new Mounts(() => store);
    await reloaded.load();
    expect(reloaded.all().map((e) => e.path).sort()).toEqual(['mine/', 'new/', 'old/', 'older/']);
  });

  it('a disable of a legacy mount migrates the others and drops it', async () => {
    const store = new MapStore();
    store.data.set('core/mounts', Buffer.from(JSON.stringify([legacyEntry('old/', 'u1'), legacyEntry('older/', 'u2')])));
    const mounts = new Mounts(() => store);
    await mounts.load();
    await mounts.disable('', 'old/');
    expect(keys(store)).toEqual(['core/mounts/u2']);
    expect((await readMountTable(store, false)).entries.map((e) => e.path)).toEqual(['older/']);
  });

  it('migrateLegacyTables writes nothing when there is no legacy table', async () => {
    const store = new MapStore();
    const mounts = new Mounts(() => store);
    await mounts.enable('', 'secret/', { type: 'kv' });
    const before = new Map(store.data);
    await mounts.migrateLegacyTables();
    expect(store.data).toEqual(before);
  });
});

describe('Mounts reload', () => {
  it('keeps a mount enabled while a reload was reading the table (no stale table installed)', async () => {
    const store = new MapStore();
    let hold: Promise<void> | undefined;
    let reached!: () => void;
    const blocked = new Promise<void>((r) => (reached = r));
    // A store whose list() of the local table answers what it held, after waiting while `hold` is
    // set: a reload caught between reading and installing the table.
    const slow: typeof store = Object.assign(Object.create(store) as MapStore, {
      list: async (prefix: string) => {
        const listed = await store.list(prefix);
        if (hold && prefix.startsWith('local/')) {
          reached();
          await hold;
        }
        return listed;
      },
    });
    const mounts = new Mounts(() => slow);
    let release!: () => void;
    hold = new Promise<void>((r) => (release = r));
    const reloading = mounts.load();
    await blocked;
    hold = undefined;
    const enabled = await mounts.enable('', 'scratch/', { type: 'kv', local: true });
    release();
    await reloading;
    expect(mounts.get('', 'scratch/')?.uuid).toBe(enabled.uuid);
  });
});

describe('Mounts overlapping reloads', () => {
  it('a reload that read the table earlier never lands after one that read it later', async () => {
    const store = new MapStore();
    const writer = new Mounts(() => store);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let holdNext = true;
    let reached!: () => void;
    const blocked = new Promise<void>((r) => (reached = r));
    // The first load's read of the replicated table answers what it held, after `held`.
    const slow: typeof store = Object.assign(Object.create(store) as MapStore, {
      list: async (prefix: string) => {
        const listed = await store.list(prefix);
        if (holdNext && !prefix.startsWith('local/')) {
          holdNext = false;
          reached();
          await held;
        }
        return listed;
      },
    });
    const reader = new Mounts(() => slow);
    const first = reader.load(); // reads the table before the mount exists
    await blocked;
    await writer.enable('', 'secret/', { type: 'kv' }); // upstream data lands
    const second = reader.load(); // the reload for it
    // Unserialized, the second load completes now, and the first would land after it. Serialized,
    // it cannot complete before the first: the bounded wait only gives it the chance.
    await Promise.race([second, new Promise((r) => setTimeout(r, 100))]);
    release();
    await Promise.all([first, second]);
    expect(reader.get('', 'secret/')).toBeDefined();
  });
});

describe('Mounts change during a reload', () => {
  it('a reload that lands while a local enable commits keeps both the reloaded and the new mount', async () => {
    const store = new MapStore();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const committing = new Promise<void>((r) => (reached = r));
    let holdCommit = false;
    // commit() waits while held: the enable is between computing its change and seeing it durable.
    const gated: typeof store = Object.assign(Object.create(store) as MapStore, {
      commit: async (ops: Parameters<MapStore['commit']>[0]) => {
        if (holdCommit) {
          reached();
          await held;
        }
        return store.commit(ops);
      },
    });
    const mounts = new Mounts(() => gated);
    await mounts.load();
    await new Mounts(() => store).enable('', 'secret/', { type: 'kv' }); // replicated data lands
    holdCommit = true;
    const enabling = mounts.enable('', 'scratch/', { type: 'kv', local: true });
    await committing;
    holdCommit = false;
    await mounts.load(); // the reload for the data that landed, while the enable commits
    release();
    await enabling;
    expect(mounts.all().map((e) => e.path).sort()).toEqual(['scratch/', 'secret/']);
  });
});
