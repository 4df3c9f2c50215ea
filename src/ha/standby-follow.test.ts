/**
 * The standby's follow with hand-written fakes of HA's ports: a standby answers reads itself only
 * once it has seen the replication state, only as a performance standby, and never while its
 * engine is failed; a failed engine is reloaded whole by the next follow; leaving the standby
 * role forgets what was seen.
 */
import { pino } from 'pino';
import { StorageFailed } from '../core/errors.js';
import type { Followed, ReloadResult } from '../storage/engine.js';
import type { Op, Store } from '../storage/store.js';
import type { HaView } from './controller.js';
import type { HaEngine, HaVault } from './ports.js';
import { StandbyFollow } from './standby-follow.js';

const log = pino({ level: 'silent' });

const emptyStore: Store = {
  get: async () => undefined,
  list: async () => [],
  commit: async (_ops: readonly Op[]) => undefined,
};

function fixture(performanceStandby = true) {
  const calls: string[] = [];
  let failure: StorageFailed | undefined;
  let mode: HaView['mode'] = 'standby';
  const listeners: ((v: HaView) => void)[] = [];
  const engine: HaEngine = {
    reload: async (): Promise<ReloadResult> => {
      calls.push('reload');
      failure = undefined;
      return { from: 'full load' };
    },
    follow: async () => void calls.push('follow'),
    followReads: async (): Promise<Followed> => {
      calls.push('followReads');
      return { entries: 0, known: true, keys: [] };
    },
    applyPushed: () => undefined,
    standby: () => undefined,
    epoch: () => 1,
    setEpoch: async () => undefined,
    onFailure: () => () => undefined,
    failure: () => failure,
  };
  const vault: HaVault = { store: () => emptyStore, reopen: async () => undefined, reload: async () => void calls.push('caches') };
  const follow = new StandbyFollow({
    ha: {
      view: () => ({ mode }) as HaView,
      onChange: (l) => {
        listeners.push(l);
        return () => undefined;
      },
    },
    engine,
    vault,
    cachesDeriveFrom: (key) => key.startsWith('core/'),
    log,
    performanceStandby,
  });
  /** One follow, run to its end. */
  const once = async (): Promise<void> => {
    follow.follow();
    await follow.settled();
  };
  const become = (m: HaView['mode']): void => {
    mode = m;
    for (const l of listeners) l({ mode } as HaView);
  };
  return { follow, calls, once, become, fail: (e: StorageFailed) => (failure = e) };
}

describe('the standby follow', () => {
  it('serves reads only once it has seen the replication state, and forgets it on leaving the standby role', async () => {
    const f = fixture();
    expect(f.follow.servesReads()).toBe(false);
    await f.once();
    expect(f.calls).toEqual(['follow', 'followReads', 'caches']);
    expect(f.follow.servesReads()).toBe(true);
    expect(f.follow.replication()).toEqual({ dr: 'disabled', performance: 'disabled', clusterId: '' });

    f.become('active');
    expect(f.follow.servesReads()).toBe(false);
    expect(f.follow.replication()).toBeUndefined();
    // Not a standby: nothing is followed.
    f.calls.length = 0;
    await f.once();
    expect(f.calls).toEqual([]);
    // A standby again: reads wait for the next follow, whose barrier reads the caches again.
    f.become('cooldown');
    expect(f.follow.servesReads()).toBe(false);
    await f.once();
    expect(f.calls).toEqual(['follow', 'followReads', 'caches']);
    expect(f.follow.servesReads()).toBe(true);
  });

  it('with disable_performance_standby it follows but never serves reads', async () => {
    const f = fixture(false);
    await f.once();
    expect(f.calls).toContain('follow');
    expect(f.follow.servesReads()).toBe(false);
  });

  it('a failed engine serves no reads, and the next follow reloads it whole', async () => {
    const f = fixture();
    await f.once();
    f.fail(new StorageFailed('the database went away'));
    expect(f.follow.servesReads()).toBe(false);
    f.calls.length = 0;
    await f.once();
    expect(f.calls).toEqual(['reload', 'followReads', 'caches']);
    expect(f.follow.servesReads()).toBe(true);
  });
});
