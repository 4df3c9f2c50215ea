import { InvalidRequest } from '../errors.js';
import { allowedEvents, refusalError, statusFields } from './describe.js';
import { step } from './step.js';
import { activation, A, bootstrapping, demoted, disabled, primary, secondary } from './testing.js';
import type { Event, EventType, State } from './types.js';

/** One event of every type, valid in shape, to try against every mode. */
const EVENTS: Readonly<Record<EventType, Event>> = {
  enablePrimary: { type: 'enablePrimary', clusterId: 'set-9', primaryClusterAddr: '' },
  demote: { type: 'demote' },
  disablePrimary: { type: 'disablePrimary' },
  issueToken: { type: 'issueToken', id: 'n', now: 0, ttlMs: 1000 },
  revokeSecondary: { type: 'revokeSecondary', id: 'n' },
  enableSecondary: { type: 'enableSecondary' },
  promote: { type: 'promote', force: true, behind: null, primaryClusterAddr: '' },
  disableSecondary: { type: 'disableSecondary' },
  updatePrimary: { type: 'updatePrimary', token: 'wrapped' },
  secondaryActivated: { type: 'secondaryActivated', id: 'n', now: 0 },
  redeemed: { type: 'redeemed', activation: activation() },
  probed: { type: 'probed', primary: A },
  activated: { type: 'activated' },
  activationFailed: { type: 'activationFailed' },
  streamState: { type: 'streamState', state: 'stream-wals' },
};

const STATES: ReadonlyArray<[string, State]> = [
  ['disabled', disabled()],
  ['primary', primary()],
  ['secondary', secondary()],
  ['bootstrapping', bootstrapping()],
  ['performance primary', primary({ kind: 'performance' })],
];

describe('events outside their mode', () => {
  it('names the mode and the routes open from it', () => {
    const r = step(primary(), EVENTS.promote);
    expect(r).toEqual({
      ok: false,
      error: {
        code: 'invalid_request',
        message:
          'cannot promote: this cluster is a DR primary; from primary you may call primary/demote, ' +
          'primary/disable, primary/secondary-token, primary/revoke-secondary',
      },
    });
  });

  it.each<[string, State, EventType, RegExp]>([
    ['enable a primary on a secondary', secondary(), 'enablePrimary', /^cannot enable a primary: this cluster is a DR secondary; from secondary you may call secondary\/promote, secondary\/disable, secondary\/update-primary$/],
    ['enable a secondary on a secondary', secondary(), 'enableSecondary', /^cannot enable a secondary: this cluster is a DR secondary;/],
    ['demote a disabled cluster', disabled('performance'), 'demote', /^cannot demote: this cluster has performance replication disabled; from disabled you may call primary\/enable, secondary\/enable$/],
    ['enable a primary twice', primary(), 'enablePrimary', /^cannot enable a primary: this cluster is a DR primary;/],
    ['promote a disabled cluster', disabled(), 'promote', /^cannot promote: this cluster has DR replication disabled;/],
    ['update-primary on a primary', primary(), 'updatePrimary', /^cannot update the primary: this cluster is a DR primary;/],
    ['issue a token on a demoted primary', demoted(), 'issueToken', /^cannot issue a secondary token: this cluster is a demoted DR primary, now a secondary with no primary;/],
    ['promote during activation', bootstrapping(), 'promote', /^cannot promote: this cluster is activating as a DR secondary; from bootstrapping you may call secondary\/disable$/],
  ])('%s', (_name, state, type, message) => {
    const r = step(state, EVENTS[type]);
    if (r.ok) throw new Error('expected a refusal');
    expect(r.error.code).toBe('invalid_request');
    expect(r.error.message).toMatch(message);
  });

  // Exhaustive: allowedEvents is exactly what step accepts by mode, and every other event is refused
  // with a message naming the mode, so the messages can never drift from the machine.
  it.each(STATES)('%s refuses exactly the events outside allowedEvents', (_name, state) => {
    const allowed = new Set(allowedEvents(state));
    for (const [type, event] of Object.entries(EVENTS)) {
      const r = step(state, event);
      if (allowed.has(type as EventType)) {
        const refusedByMode = !r.ok && r.error.message.includes(`from ${state.mode}`);
        expect([type, refusedByMode]).toEqual([type, false]);
      } else {
        expect([type, r.ok]).toEqual([type, false]);
        if (!r.ok) expect(r.error.message).toContain(`from ${state.mode}`);
      }
    }
  });
});

describe('statusFields', () => {
  it.each<[string, State, ReturnType<typeof statusFields>]>([
    ['disabled', disabled(), { mode: 'disabled', state: 'idle' }],
    [
      'primary: known secondaries exclude revoked ids',
      primary({
        primaryClusterAddr: 'lb:8201',
        secondaries: {
          b: { status: 'active', issuedAt: 0, expiresAt: 1 },
          c: { status: 'revoked', issuedAt: 0, expiresAt: 1 },
          d: { status: 'token-issued', issuedAt: 0, expiresAt: 1 },
        },
      }),
      { mode: 'primary', state: 'running', cluster_id: 'set-1', primary_cluster_addr: 'lb:8201', known_secondaries: ['b', 'd'] },
    ],
    [
      'streaming secondary',
      secondary(),
      { mode: 'secondary', state: 'stream-wals', cluster_id: 'set-1', secondary_id: 'b', primary_cluster_addr: A.clusterAddr },
    ],
    [
      'demoted primary',
      demoted(),
      { mode: 'secondary', state: 'idle', cluster_id: 'set-1', secondary_id: '', primary_cluster_addr: '' },
    ],
    [
      'bootstrapping',
      bootstrapping(),
      { mode: 'bootstrapping', state: 'idle', cluster_id: 'set-1', secondary_id: 'b', primary_cluster_addr: A.clusterAddr },
    ],
  ])('%s', (_name, state, want) => {
    expect(statusFields(state)).toEqual(want);
  });
});

describe('refusalError', () => {
  it('maps every refusal, a failed promote safety check included, to InvalidRequest (400)', () => {
    const bad = step(disabled(), EVENTS.demote);
    const late = step(secondary(), { type: 'promote', force: false, behind: { applied: 5, primaryLast: 8 }, primaryClusterAddr: '' });
    if (bad.ok || late.ok) throw new Error('expected refusals');
    const e400 = refusalError(bad.error);
    const late400 = refusalError(late.error);
    expect(e400).toBeInstanceOf(InvalidRequest);
    expect(e400.messages).toEqual([bad.error.message]);
    expect(late400).toBeInstanceOf(InvalidRequest);
    expect(late400.messages[0]).toMatch(/3 entries behind/);
  });
});
