import { lazy } from './lazy.js';

test('runs its loader once, at the first call, and hands every caller the same promise', async () => {
  let calls = 0;
  const get = lazy(async () => ({ n: ++calls }));
  expect(calls).toBe(0);
  const [a, b] = await Promise.all([get(), get()]);
  expect(calls).toBe(1);
  expect(a).toBe(b);
  expect(await get()).toBe(a);
});

test('a failed load stays failed: no second attempt behind a caller\'s back', async () => {
  let calls = 0;
  const get = lazy(async () => {
    calls++;
    throw new Error('no module');
  });
  await expect(get()).rejects.toThrow('no module');
  await expect(get()).rejects.toThrow('no module');
  expect(calls).toBe(1);
});
