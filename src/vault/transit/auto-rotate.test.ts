/**
 * Transit's auto-rotation sweep on a real storage engine (MemoryBackend) with a clock the test
 * moves: a key whose auto_rotate_period has passed gets a new version, others are left alone,
 * and a sweep on a store that refuses writes changes nothing.
 */
import { ReplicatedWriteRefused } from '../../core/errors.js';
import { testCipher } from '../../storage/engine.fixtures.js';
import { StorageEngine } from '../../storage/engine.js';
import { MemoryBackend } from '../../storage/memory.js';
import { ScopedStore, type Store } from '../../storage/store.js';
import { createTransitEngine } from './index.js';

describe('transit auto-rotation', () => {
  it('rotates the keys whose period has passed, once, and no others', async () => {
    const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 1000, walMaxBytes: 1 << 24 });
    const store = new ScopedStore(engine.secure(testCipher()), 'logical/t/');
    let clock = Date.parse('2026-11-29T00:00:00Z');
    const transit = createTransitEngine({ now: () => new Date(clock) });
    const write = (path: string, data: Record<string, unknown>) => transit.handle({ operation: 'update', path, data }, store);
    const latest = async (name: string) => ((await transit.handle({ operation: 'read', path: `keys/${name}`, data: {} }, store))?.data as { latest_version: number }).latest_version;
    await write('keys/hourly', { auto_rotate_period: '1h' });
    await write('keys/daily', { auto_rotate_period: '24h' });
    await write('keys/never', {});

    expect(await transit.autoRotate(store)).toBe(0);
    clock += 61 * 60 * 1000;
    expect(await transit.autoRotate(store)).toBe(1);
    expect([await latest('hourly'), await latest('daily'), await latest('never')]).toEqual([2, 1, 1]);
    // The new version restarts the period.
    expect(await transit.autoRotate(store)).toBe(0);
    clock += 24 * 60 * 60 * 1000;
    expect(await transit.autoRotate(store)).toBe(2);
    expect([await latest('hourly'), await latest('daily'), await latest('never')]).toEqual([3, 2, 1]);

    // A store that may not write (a secondary's replicated mount): the refusal, nothing changed.
    const refusing: Store = { get: (k) => store.get(k), list: (p) => store.list(p), commit: () => Promise.reject(new ReplicatedWriteRefused('secondary')) };
    clock += 2 * 60 * 60 * 1000;
    await expect(transit.autoRotate(refusing)).rejects.toThrow(ReplicatedWriteRefused);
    expect(await latest('hourly')).toBe(3);
  });
});
