import { step, resume } from './step.js';
import { A, activation, B, bootstrapping, deepFreeze, demoted, disabled, primary, run, secondary } from './testing.js';
import type { Effect, Event, State } from './types.js';

const MIN = 60_000;
const T0 = 1_700_000_000_000;

/** Each row: one allowed move of spec section 3 (or a rule next to it), its next state and effects. */
const transitions: ReadonlyArray<[string, State, Event, State, Effect[]]> = [
  [
    'disabled -> primary on primary/enable, with the injected new cluster id',
    disabled(),
    { type: 'enablePrimary', clusterId: 'set-new', primaryClusterAddr: 'lb.example:8201' },
    primary({ clusterId: 'set-new', primaryClusterAddr: 'lb.example:8201' }),
    [{ type: 'createCa' }, { type: 'persist' }, { type: 'startServer' }],
  ],
  [
    'primary -> secondary on demote: keeps the cluster id, follows no primary',
    primary({ secondaries: { b: { status: 'active', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'demote' },
    demoted(),
    [{ type: 'stopServer' }, { type: 'persist' }, { type: 'dropCa' }],
  ],
  [
    'primary -> disabled on primary/disable: the server stops, the CA goes',
    primary(),
    { type: 'disablePrimary' },
    disabled(),
    [{ type: 'stopServer' }, { type: 'persist' }, { type: 'dropCa' }],
  ],
  [
    'disabled: secondary/enable only asks for the token to be redeemed',
    disabled(),
    { type: 'enableSecondary' },
    disabled(),
    [{ type: 'redeem' }],
  ],
  [
    'disabled -> bootstrapping once the token is redeemed: persist, then wipe, then dial',
    disabled(),
    { type: 'redeemed', activation: activation() },
    bootstrapping(),
    [{ type: 'persist' }, { type: 'wipe' }, { type: 'connect', primary: A }],
  ],
  [
    'bootstrapping -> secondary when activation completes',
    bootstrapping(),
    { type: 'activated' },
    secondary({ state: 'idle' }),
    [{ type: 'persist' }],
  ],
  [
    'bootstrapping -> disabled when activation fails',
    bootstrapping(),
    { type: 'activationFailed' },
    disabled(),
    [{ type: 'disconnectPrimary' }, { type: 'persist' }, { type: 'forgetPrimary' }],
  ],
  [
    'bootstrapping -> disabled on secondary/disable: the way out of a bootstrap that cannot finish',
    bootstrapping(),
    { type: 'disableSecondary' },
    disabled(),
    [{ type: 'disconnectPrimary' }, { type: 'persist' }, { type: 'forgetPrimary' }],
  ],
  [
    'secondary -> primary on promote: same set id, empty registry, new epoch after the stream closes',
    secondary(),
    { type: 'promote', force: false, behind: null, primaryClusterAddr: '' },
    primary(),
    [{ type: 'disconnectPrimary' }, { type: 'newEpoch' }, { type: 'createCa' }, { type: 'persist' }, { type: 'startServer' }],
  ],
  [
    'a demoted primary can be promoted back; it has no stream to close',
    demoted(),
    { type: 'promote', force: false, behind: null, primaryClusterAddr: 'x:1' },
    primary({ primaryClusterAddr: 'x:1' }),
    [{ type: 'newEpoch' }, { type: 'createCa' }, { type: 'persist' }, { type: 'startServer' }],
  ],
  [
    'force promotes while behind the primary',
    secondary(),
    { type: 'promote', force: true, behind: { applied: 5, primaryLast: 8 }, primaryClusterAddr: '' },
    primary(),
    [{ type: 'disconnectPrimary' }, { type: 'newEpoch' }, { type: 'createCa' }, { type: 'persist' }, { type: 'startServer' }],
  ],
  [
    'force promotes mid merkle-sync',
    secondary({ state: 'merkle-sync' }),
    { type: 'promote', force: true, behind: null, primaryClusterAddr: '' },
    primary(),
    [{ type: 'disconnectPrimary' }, { type: 'newEpoch' }, { type: 'createCa' }, { type: 'persist' }, { type: 'startServer' }],
  ],
  [
    'secondary -> disabled on secondary/disable',
    secondary(),
    { type: 'disableSecondary' },
    disabled(),
    [{ type: 'disconnectPrimary' }, { type: 'persist' }, { type: 'forgetPrimary' }],
  ],
  [
    'a demoted secondary disables without a stream or credentials to drop',
    demoted(),
    { type: 'disableSecondary' },
    disabled(),
    [{ type: 'persist' }],
  ],
  [
    'update-primary with a token: validated, then the token is redeemed',
    secondary(),
    { type: 'updatePrimary', token: 'wrapped.jwt' },
    secondary(),
    [{ type: 'redeem' }],
  ],
  [
    'secondary -> secondary when the token is redeemed: new primary, no wipe',
    secondary(),
    { type: 'redeemed', activation: activation({ secondaryId: 'b2', primaryClusterAddr: B.clusterAddr, primaryApiAddr: B.apiAddr }) },
    secondary({ secondaryId: 'b2', primary: B, state: 'idle' }),
    [{ type: 'disconnectPrimary' }, { type: 'resync' }, { type: 'persist' }, { type: 'connect', primary: B }],
  ],
  [
    'a demoted primary rejoins its set with a token, and is no longer "newly demoted"',
    demoted(),
    { type: 'redeemed', activation: activation({ secondaryId: 'a', primaryClusterAddr: B.clusterAddr, primaryApiAddr: B.apiAddr }) },
    secondary({ secondaryId: 'a', primary: B, state: 'idle' }),
    [{ type: 'resync' }, { type: 'persist' }, { type: 'connect', primary: B }],
  ],
  [
    'update-primary with a blank token forgets the primary and stays secondary',
    secondary(),
    { type: 'updatePrimary', token: '' },
    secondary({ primary: null, state: 'idle' }),
    [{ type: 'disconnectPrimary' }, { type: 'persist' }, { type: 'forgetPrimary' }],
  ],
  [
    'update-primary with addresses asks for them to be probed in order',
    secondary({ kind: 'performance' }),
    { type: 'updatePrimary', addrs: [B.clusterAddr, A.clusterAddr] },
    secondary({ kind: 'performance' }),
    [{ type: 'probe', addrs: [B.clusterAddr, A.clusterAddr] }],
  ],
  [
    'the first address to answer becomes the primary',
    secondary({ kind: 'performance' }),
    { type: 'probed', primary: B },
    secondary({ kind: 'performance', primary: B, state: 'idle' }),
    [{ type: 'disconnectPrimary' }, { type: 'persist' }, { type: 'connect', primary: B }],
  ],
  [
    'a secondary that forgot its primary may probe addresses',
    secondary({ primary: null, state: 'idle' }),
    { type: 'probed', primary: B },
    secondary({ primary: B, state: 'idle' }),
    [{ type: 'persist' }, { type: 'connect', primary: B }],
  ],
  [
    'the stream state is recorded without persisting',
    secondary({ state: 'idle' }),
    { type: 'streamState', state: 'merkle-diff' },
    secondary({ state: 'merkle-diff' }),
    [],
  ],
  [
    'issue a secondary token: registered with its expiry',
    primary(),
    { type: 'issueToken', id: 'b', now: T0, ttlMs: 30 * MIN },
    primary({ secondaries: { b: { status: 'token-issued', issuedAt: T0, expiresAt: T0 + 30 * MIN } } }),
    [{ type: 'persist' }],
  ],
  [
    'a secondary redeems its token before expiry: active',
    primary({ secondaries: { b: { status: 'token-issued', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'secondaryActivated', id: 'b', now: T0 + MIN - 1 },
    primary({ secondaries: { b: { status: 'active', issuedAt: T0, expiresAt: T0 + MIN } } }),
    [{ type: 'persist' }],
  ],
  [
    'revoke-secondary: revoked, persisted, then disconnected at once',
    primary({ secondaries: { b: { status: 'active', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'revokeSecondary', id: 'b' },
    primary({ secondaries: { b: { status: 'revoked', issuedAt: T0, expiresAt: T0 + MIN } } }),
    [{ type: 'persist' }, { type: 'disconnect', id: 'b' }],
  ],
  [
    'revoking an issued but unused token works too',
    primary({ secondaries: { c: { status: 'token-issued', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'revokeSecondary', id: 'c' },
    primary({ secondaries: { c: { status: 'revoked', issuedAt: T0, expiresAt: T0 + MIN } } }),
    [{ type: 'persist' }, { type: 'disconnect', id: 'c' }],
  ],
  [
    'revoking twice changes nothing',
    primary({ secondaries: { b: { status: 'revoked', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'revokeSecondary', id: 'b' },
    primary({ secondaries: { b: { status: 'revoked', issuedAt: T0, expiresAt: T0 + MIN } } }),
    [],
  ],
];

describe('step: allowed transitions', () => {
  it.each(transitions)('%s', (_name, from, event, want, effects) => {
    const r = step(deepFreeze(from), deepFreeze(event));
    if (!r.ok) throw new Error(r.error.message);
    expect(r.state).toEqual(want);
    expect(r.effects).toEqual(effects);
  });
});

/** Each row: a refused event and words its message must carry. */
const refusals: ReadonlyArray<[string, State, Event, 'invalid_request', RegExp]> = [
  [
    'update-primary with both token and update_primary_addrs (spec 7)',
    secondary(),
    { type: 'updatePrimary', token: 'x', addrs: [B.clusterAddr] },
    'invalid_request',
    /mutually exclusive/,
  ],
  [
    'update-primary with a blank token and addresses: both were sent',
    secondary(),
    { type: 'updatePrimary', token: '', addrs: [B.clusterAddr] },
    'invalid_request',
    /mutually exclusive/,
  ],
  ['update-primary with neither', secondary(), { type: 'updatePrimary' }, 'invalid_request', /one of token or update_primary_addrs is required/],
  [
    'update_primary_addrs on a newly demoted DR secondary (spec 7)',
    demoted(),
    { type: 'updatePrimary', addrs: [B.clusterAddr] },
    'invalid_request',
    /not allowed for a newly demoted DR secondary.*use a token/,
  ],
  [
    'a demoted secondary that also forgot its primary is still newly demoted',
    { ...demoted(), primary: null },
    { type: 'updatePrimary', addrs: [B.clusterAddr] },
    'invalid_request',
    /newly demoted/,
  ],
  [
    'a probe result cannot attach a newly demoted secondary either',
    demoted('performance'),
    { type: 'probed', primary: B },
    'invalid_request',
    /newly demoted performance secondary/,
  ],
  ['update_primary_addrs empty', secondary(), { type: 'updatePrimary', addrs: [] }, 'invalid_request', /one or more non-empty/],
  ['update_primary_addrs with a blank entry', secondary(), { type: 'updatePrimary', addrs: ['a:1', ''] }, 'invalid_request', /non-empty/],
  [
    'a token from another replication set (a re-enabled primary) needs a wipe',
    secondary(),
    { type: 'redeemed', activation: activation({ clusterId: 'set-2' }) },
    'invalid_request',
    /belongs to replication set "set-2".*"set-1".*secondary\/enable, which wipes storage/,
  ],
  [
    'reusing an id for a second token (spec 7)',
    primary({ secondaries: { b: { status: 'token-issued', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'issueToken', id: 'b', now: T0, ttlMs: MIN },
    'invalid_request',
    /id "b" was already used/,
  ],
  [
    'reusing a revoked id',
    primary({ secondaries: { b: { status: 'revoked', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'issueToken', id: 'b', now: T0, ttlMs: MIN },
    'invalid_request',
    /already used \(status revoked\); ids are unique, revoked ones included/,
  ],
  ['an empty token id', primary(), { type: 'issueToken', id: '', now: T0, ttlMs: MIN }, 'invalid_request', /id must not be empty/],
  ['a zero ttl', primary(), { type: 'issueToken', id: 'b', now: T0, ttlMs: 0 }, 'invalid_request', /ttl must be a positive/],
  ['a ttl past 768h', primary(), { type: 'issueToken', id: 'b', now: T0, ttlMs: 768 * 3_600_000 + 1000 }, 'invalid_request', /ttl 768h0m1s is longer than the 768h0m0s/],
  ['revoke-secondary of an unknown id', primary(), { type: 'revokeSecondary', id: 'zz' }, 'invalid_request', /no secondary token was issued with id "zz"/],
  [
    'revoke-secondary of an id inherited from Object.prototype',
    primary(),
    { type: 'revokeSecondary', id: 'constructor' },
    'invalid_request',
    /no secondary token was issued with id "constructor"/,
  ],
  [
    'an expired token cannot be redeemed',
    primary({ secondaries: { b: { status: 'token-issued', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'secondaryActivated', id: 'b', now: T0 + MIN },
    'invalid_request',
    /has expired/,
  ],
  [
    'a token works once',
    primary({ secondaries: { b: { status: 'active', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'secondaryActivated', id: 'b', now: T0 },
    'invalid_request',
    /already used/,
  ],
  [
    'a revoked secondary cannot activate',
    primary({ secondaries: { b: { status: 'revoked', issuedAt: T0, expiresAt: T0 + MIN } } }),
    { type: 'secondaryActivated', id: 'b', now: T0 },
    'invalid_request',
    /was revoked/,
  ],
  [
    'promote without force while behind (spec 7): 400 naming how far',
    secondary(),
    { type: 'promote', force: false, behind: { applied: 5, primaryLast: 8 }, primaryClusterAddr: '' },
    'invalid_request',
    /^replication is still catching up: the primary last reported WAL index 8 but this secondary has applied 5 \(3 entries behind\).*force=true/,
  ],
  [
    'promote without force mid merkle-sync: 400',
    secondary({ state: 'merkle-sync' }),
    { type: 'promote', force: false, behind: null, primaryClusterAddr: '' },
    'invalid_request',
    /^replication is still catching up: a merkle-sync is in progress/,
  ],
  [
    'promote without force mid merkle-diff: 400',
    secondary({ state: 'merkle-diff' }),
    { type: 'promote', force: false, behind: null, primaryClusterAddr: '' },
    'invalid_request',
    /^replication is still catching up: a merkle-diff is in progress/,
  ],
  [
    'stream facts need a primary',
    secondary({ primary: null, state: 'idle' }),
    { type: 'streamState', state: 'stream-wals' },
    'invalid_request',
    /not connected to a primary/,
  ],
  [
    'enable primary with an empty injected id',
    disabled(),
    { type: 'enablePrimary', clusterId: '', primaryClusterAddr: '' },
    'invalid_request',
    /cluster id is empty/,
  ],
  [
    'a token without ids cannot start activation',
    disabled(),
    { type: 'redeemed', activation: activation({ secondaryId: '' }) },
    'invalid_request',
    /no cluster id or secondary id/,
  ],
];

describe('step: refused events', () => {
  it.each(refusals)('%s', (_name, from, event, code, message) => {
    const r = step(deepFreeze(from), deepFreeze(event));
    if (r.ok) throw new Error('expected a refusal');
    expect(r.error.code).toBe(code);
    expect(r.error.message).toMatch(message);
  });
});

describe('token ids are opaque strings', () => {
  it('keeps "__proto__" as an ordinary, unique id', () => {
    const { state } = run(primary(), { type: 'issueToken', id: '__proto__', now: T0, ttlMs: MIN });
    if (state.mode !== 'primary') throw new Error(state.mode);
    expect(Object.keys(state.secondaries)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(state.secondaries)).toBe(Object.prototype);
    const again = step(state, { type: 'issueToken', id: '__proto__', now: T0, ttlMs: MIN });
    expect(again.ok).toBe(false);
    expect(run(state, { type: 'revokeSecondary', id: '__proto__' }).effects).toEqual([
      { type: 'persist' },
      { type: 'disconnect', id: '__proto__' },
    ]);
  });

  it('survives a JSON round trip, as the driver persists it', () => {
    const { state } = run(primary(), { type: 'issueToken', id: '__proto__', now: T0, ttlMs: MIN });
    const loaded = JSON.parse(JSON.stringify(state)) as State;
    expect(loaded).toEqual(state);
    expect(step(loaded, { type: 'issueToken', id: '__proto__', now: T0, ttlMs: MIN }).ok).toBe(false);
  });
});

describe('resume after a restart', () => {
  it.each<[string, State, State, Effect[]]>([
    ['disabled does nothing', disabled(), disabled(), []],
    ['a primary serves again', primary(), primary(), [{ type: 'startServer' }]],
    ['bootstrapping wipes again and redials', bootstrapping(), bootstrapping(), [{ type: 'wipe' }, { type: 'connect', primary: A }]],
    ['a secondary redials and starts idle', secondary({ state: 'merkle-sync' }), secondary({ state: 'idle' }), [{ type: 'connect', primary: A }]],
    ['a secondary without a primary waits', demoted(), demoted(), []],
  ])('%s', (_name, persisted, state, effects) => {
    expect(resume(deepFreeze(persisted))).toEqual({ state, effects });
  });
});
