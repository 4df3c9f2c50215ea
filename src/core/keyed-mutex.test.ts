import { KeyedMutex } from './keyed-mutex.js';

describe('KeyedMutex', () => {
  it('runs holders of one key in arrival order, other keys freely, and forgets idle keys', async () => {
    const locks = new KeyedMutex();
    const log: string[] = [];
    const step = (name: string) => async () => {
      log.push(`${name}:in`);
      await new Promise((r) => setImmediate(r));
      log.push(`${name}:out`);
    };
    await Promise.all([locks.run('a', step('a1')), locks.run('a', step('a2')), locks.run('b', step('b1'))]);
    expect(log.indexOf('a1:out')).toBeLessThan(log.indexOf('a2:in'));
    expect(log.indexOf('b1:in')).toBeLessThan(log.indexOf('a1:out'));
    expect(locks.size).toBe(0);
  });

  it('releases on a throw, and a release called twice is harmless', async () => {
    const locks = new KeyedMutex();
    await expect(locks.run('k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const release = await locks.acquire('k');
    release();
    release();
    await expect(locks.run('k', async () => 7)).resolves.toBe(7);
    expect(locks.size).toBe(0);
  });
});
