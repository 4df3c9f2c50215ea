/**
 * Scenario scripts: several clusters, each with its own machine, driven the way the driver would
 * drive them (intent, then the I/O result as a fact). Each step asserts what an operator would see.
 */
import { statusFields } from './describe.js';
import { resume, step } from './step.js';
import { A, B } from './testing.js';
import { initialState, type Activation, type Effect, type Event, type Kind, type PrimaryAddrs, type State } from './types.js';

const MIN = 60_000;
const T0 = 1_700_000_000_000;

/** A few clusters of one kind; `act` steps one and keeps its state, like the driver does. */
function world(kind: Kind) {
  const states = new Map<string, State>();
  const addrs = new Map<string, PrimaryAddrs>([['a', A], ['b', B], ['c', { clusterAddr: 'c:8201', apiAddr: 'https://c:8200' }]]);
  const get = (name: string): State => states.get(name) ?? initialState(kind);
  return {
    get,
    status: (name: string) => statusFields(get(name)),
    act(name: string, event: Event): readonly Effect[] {
      const r = step(get(name), event);
      if (!r.ok) throw new Error(`${name}: ${event.type} refused: ${r.error.message}`);
      states.set(name, r.state);
      return r.effects;
    },
    refuse(name: string, event: Event) {
      const before = get(name);
      const r = step(before, event);
      if (r.ok) throw new Error(`${name}: ${event.type} was accepted`);
      return r.error;
    },
    restart(name: string): readonly Effect[] {
      const r = resume(JSON.parse(JSON.stringify(get(name))) as State);
      states.set(name, r.state);
      return r.effects;
    },
    /** `primaryName` issues a token for `id`, and `name` redeems it (the token's facts). */
    token(primaryName: string, id: string, now: number): Activation {
      this.act(primaryName, { type: 'issueToken', id, now, ttlMs: 30 * MIN });
      const p = get(primaryName);
      if (p.mode !== 'primary') throw new Error(p.mode);
      const at = addrs.get(primaryName) ?? A;
      return { secondaryId: id, clusterId: p.clusterId, primaryClusterAddr: at.clusterAddr, primaryApiAddr: at.apiAddr };
    },
  };
}

describe('DR failover and failback', () => {
  it('enable, token, activate, primary dies, promote, old primary demotes and rejoins with a token', () => {
    const w = world('dr');

    // a becomes the primary of a new set.
    expect(w.act('a', { type: 'enablePrimary', clusterId: 'set-1', primaryClusterAddr: '' })).toContainEqual({ type: 'startServer' });
    const tokenB = w.token('a', 'b', T0);

    // b enables as secondary: mode check, token redeemed, storage wiped, handshake, streaming.
    expect(w.act('b', { type: 'enableSecondary' })).toEqual([{ type: 'redeem' }]);
    expect(w.act('b', { type: 'redeemed', activation: tokenB })).toEqual([{ type: 'persist' }, { type: 'wipe' }, { type: 'connect', primary: A }]);
    expect(w.status('b').mode).toBe('bootstrapping');
    w.act('a', { type: 'secondaryActivated', id: 'b', now: T0 + MIN });
    w.act('b', { type: 'activated' });
    w.act('b', { type: 'streamState', state: 'merkle-diff' });
    w.act('b', { type: 'streamState', state: 'merkle-sync' });
    w.act('b', { type: 'streamState', state: 'stream-wals' });
    expect(w.status('b')).toEqual({ mode: 'secondary', state: 'stream-wals', cluster_id: 'set-1', secondary_id: 'b', primary_cluster_addr: A.clusterAddr });
    expect(w.status('a')).toMatchObject({ mode: 'primary', cluster_id: 'set-1', known_secondaries: ['b'] });

    // a dies. b was in sync, so promote without force succeeds; a dead primary is no reason to refuse.
    const promoted = w.act('b', { type: 'promote', force: false, behind: null, primaryClusterAddr: '' });
    expect(promoted.map((e) => e.type)).toEqual(['disconnectPrimary', 'newEpoch', 'createCa', 'persist', 'startServer']);
    expect(w.status('b')).toEqual({ mode: 'primary', state: 'running', cluster_id: 'set-1', primary_cluster_addr: '', known_secondaries: [] });

    // a comes back as a primary (two primaries: the operator must demote one) and is demoted.
    expect(w.restart('a')).toEqual([{ type: 'startServer' }]);
    w.act('a', { type: 'demote' });
    expect(w.status('a')).toEqual({ mode: 'secondary', state: 'idle', cluster_id: 'set-1', secondary_id: '', primary_cluster_addr: '' });

    // As a newly demoted DR secondary, a may not probe addresses; it needs a token from b.
    expect(w.refuse('a', { type: 'updatePrimary', addrs: [B.clusterAddr] }).message).toMatch(/newly demoted DR secondary/);
    expect(w.act('a', { type: 'updatePrimary', token: 'wrapped-by-b' })).toEqual([{ type: 'redeem' }]);
    const tokenA = w.token('b', 'a', T0 + 10 * MIN);
    expect(w.act('a', { type: 'redeemed', activation: tokenA })).toEqual([{ type: 'resync' }, { type: 'persist' }, { type: 'connect', primary: B }]);
    w.act('b', { type: 'secondaryActivated', id: 'a', now: T0 + 11 * MIN });

    // a's divergent tail is reconciled, then it streams. No wipe happened anywhere on a.
    w.act('a', { type: 'streamState', state: 'merkle-diff' });
    w.act('a', { type: 'streamState', state: 'merkle-sync' });
    w.act('a', { type: 'streamState', state: 'stream-wals' });
    expect(w.status('a')).toEqual({ mode: 'secondary', state: 'stream-wals', cluster_id: 'set-1', secondary_id: 'a', primary_cluster_addr: B.clusterAddr });
    expect(w.status('b')).toMatchObject({ known_secondaries: ['a'] });

    // Now that a holds credentials of the set, address probing is open to it.
    expect(w.act('a', { type: 'updatePrimary', addrs: [B.clusterAddr] })).toEqual([{ type: 'probe', addrs: [B.clusterAddr] }]);
  });

  it('other secondaries need new tokens after a promotion', () => {
    const w = world('dr');
    w.act('a', { type: 'enablePrimary', clusterId: 'set-1', primaryClusterAddr: '' });
    for (const name of ['b', 'c']) {
      w.act(name, { type: 'redeemed', activation: w.token('a', name, T0) });
      w.act('a', { type: 'secondaryActivated', id: name, now: T0 });
      w.act(name, { type: 'activated' });
    }
    w.act('b', { type: 'promote', force: true, behind: { applied: 5, primaryLast: 8 }, primaryClusterAddr: '' });
    // b's registry is empty: c's old id means nothing to it, and c's certificate came from a's CA.
    expect(w.refuse('b', { type: 'secondaryActivated', id: 'c', now: T0 }).message).toMatch(/no secondary token was issued with id "c"/);
    // c rejoins the same set without a wipe, with a token from b.
    const effects = w.act('c', { type: 'redeemed', activation: w.token('b', 'c', T0 + MIN) });
    expect(effects.map((e) => e.type)).not.toContain('wipe');
    expect(w.status('c')).toMatchObject({ cluster_id: 'set-1', primary_cluster_addr: B.clusterAddr });
  });

  it('a secondary still catching up is not promoted without force', () => {
    const w = world('dr');
    w.act('a', { type: 'enablePrimary', clusterId: 'set-1', primaryClusterAddr: '' });
    w.act('b', { type: 'redeemed', activation: w.token('a', 'b', T0) });
    w.act('b', { type: 'activated' });
    w.act('b', { type: 'streamState', state: 'merkle-sync' });
    const refused = w.refuse('b', { type: 'promote', force: false, behind: null, primaryClusterAddr: '' });
    expect(refused.code).toBe('invalid_request');
    expect(w.status('b')).toMatchObject({ mode: 'secondary', state: 'merkle-sync' });
    w.act('b', { type: 'streamState', state: 'stream-wals' });
    w.act('b', { type: 'promote', force: false, behind: null, primaryClusterAddr: '' });
    expect(w.status('b').mode).toBe('primary');
  });
});

describe('disable and re-enable', () => {
  it('a re-enabled primary has a new cluster id; its old secondaries must wipe to rejoin', () => {
    const w = world('performance');
    w.act('a', { type: 'enablePrimary', clusterId: 'set-1', primaryClusterAddr: '' });
    w.act('b', { type: 'redeemed', activation: w.token('a', 'b', T0) });
    w.act('b', { type: 'activated' });

    expect(w.act('a', { type: 'disablePrimary' }).map((e) => e.type)).toEqual(['stopServer', 'persist', 'dropCa']);
    w.act('a', { type: 'enablePrimary', clusterId: 'set-2', primaryClusterAddr: '' });
    expect(w.status('a')).toMatchObject({ cluster_id: 'set-2', known_secondaries: [] });
    // The registry was reset with the set, so "b" is a fresh id there.
    const tokenB = w.token('a', 'b', T0 + MIN);

    expect(w.refuse('b', { type: 'redeemed', activation: tokenB }).message).toMatch(/belongs to replication set "set-2"/);
    w.act('b', { type: 'disableSecondary' });
    expect(w.act('b', { type: 'redeemed', activation: tokenB })).toContainEqual({ type: 'wipe' });
    w.act('b', { type: 'activated' });
    expect(w.status('b')).toMatchObject({ mode: 'secondary', cluster_id: 'set-2' });
  });

  it('a failed activation leaves the (already wiped) cluster disabled, ready for a new token', () => {
    const w = world('dr');
    w.act('a', { type: 'enablePrimary', clusterId: 'set-1', primaryClusterAddr: '' });
    w.act('b', { type: 'redeemed', activation: w.token('a', 'b', T0) });
    expect(w.restart('b')).toEqual([{ type: 'wipe' }, { type: 'connect', primary: A }]);
    w.act('b', { type: 'activationFailed' });
    expect(w.status('b').mode).toBe('disabled');
    w.act('b', { type: 'redeemed', activation: w.token('a', 'b2', T0) });
    w.act('b', { type: 'activated' });
    expect(w.status('b')).toMatchObject({ mode: 'secondary', secondary_id: 'b2' });
  });
});

describe('revocation', () => {
  it('cuts the secondary at once; its id can never be issued again', () => {
    const w = world('performance');
    w.act('a', { type: 'enablePrimary', clusterId: 'set-1', primaryClusterAddr: '' });
    w.act('b', { type: 'redeemed', activation: w.token('a', 'b', T0) });
    w.act('a', { type: 'secondaryActivated', id: 'b', now: T0 });
    expect(w.act('a', { type: 'revokeSecondary', id: 'b' })).toEqual([{ type: 'persist' }, { type: 'disconnect', id: 'b' }]);
    expect(w.refuse('a', { type: 'secondaryActivated', id: 'b', now: T0 }).message).toMatch(/revoked/);
    expect(w.refuse('a', { type: 'issueToken', id: 'b', now: T0, ttlMs: MIN }).message).toMatch(/already used/);
    expect(w.status('a')).toMatchObject({ known_secondaries: [] });
    // A state reloaded after a restart still knows.
    w.restart('a');
    expect(w.refuse('a', { type: 'issueToken', id: 'b', now: T0, ttlMs: MIN }).message).toMatch(/already used/);
  });
});

describe('update-primary on a performance secondary', () => {
  it('forgets the primary with a blank token, then finds a new one by probing', () => {
    const w = world('performance');
    w.act('a', { type: 'enablePrimary', clusterId: 'set-1', primaryClusterAddr: '' });
    w.act('c', { type: 'redeemed', activation: w.token('a', 'c', T0) });
    w.act('c', { type: 'activated' });
    w.act('c', { type: 'streamState', state: 'stream-wals' });

    expect(w.act('c', { type: 'updatePrimary', token: '' })).toEqual([{ type: 'disconnectPrimary' }, { type: 'persist' }, { type: 'forgetPrimary' }]);
    expect(w.status('c')).toMatchObject({ mode: 'secondary', state: 'idle', primary_cluster_addr: '', cluster_id: 'set-1' });
    expect(w.restart('c')).toEqual([]);

    expect(w.act('c', { type: 'updatePrimary', addrs: ['down:8201', B.clusterAddr] })).toEqual([{ type: 'probe', addrs: ['down:8201', B.clusterAddr] }]);
    expect(w.act('c', { type: 'probed', primary: B })).toEqual([{ type: 'persist' }, { type: 'connect', primary: B }]);
    expect(w.status('c')).toMatchObject({ primary_cluster_addr: B.clusterAddr, secondary_id: 'c' });
    expect(w.restart('c')).toEqual([{ type: 'connect', primary: B }]);
  });
});
