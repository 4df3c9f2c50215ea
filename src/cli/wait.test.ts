/** `write -wait`'s target check: a secondary streaming from one of the addresses given, in either form. */
import { Goal, reached } from './wait.js';

describe('reached', () => {
  const streaming = (addr: string) => ({ mode: 'secondary', state: 'stream-wals', primary_cluster_addr: addr }) as never;
  const target = (addrs?: string[]) => ({ goal: Goal.streaming, ...(addrs ? { primaryClusterAddrs: addrs } : {}) }) as never;

  it('matches the status address (Vault\'s https form) against addresses given as host:port or https://host:port', () => {
    expect(reached(streaming('https://10.0.0.5:8201'), target(['10.0.0.5:8201']))).toBe(true);
    expect(reached(streaming('https://10.0.0.5:8201'), target(['10.0.0.9:8201', 'https://10.0.0.5:8201']))).toBe(true);
    expect(reached(streaming('10.0.0.5:8201'), target(['https://10.0.0.5:8201']))).toBe(true);
    expect(reached(streaming('https://10.0.0.5:8201'), target(['10.0.0.5:8202']))).toBe(false);
    expect(reached(streaming(''), target(['10.0.0.5:8201']))).toBe(false);
    expect(reached(streaming(''), target())).toBe(true);
  });
});
