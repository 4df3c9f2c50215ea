/**
 * The leadership state machine of one node of an HA cluster, pure: a function of (state, event)
 * that answers the new state and the effects the driver carries out in order. No I/O, clock or
 * randomness: every time arrives inside an event as ms (the driver's monotonic-enough clock).
 *
 *   let s: State = initialState(leaseOptions({ ttlMs: 2000 }));
 *   const r = step(s, { type: 'tick', now: Date.now() });
 *   s = r.state; for (const e of r.effects) await perform(e);   // tryAcquire: run the query, then
 *   s = step(s, { type: 'acquireSent', now }).state;            // ...step what it answered
 *
 * The lock row is timed by the database's clock; this node only knows when it SENT each request.
 * Every request is sent after the driver steps its `*Sent` event, so the database renewed the lease
 * at a moment no earlier than that send time, and the lease cannot expire before
 * `sentAt + ttlMs` at the database. Measuring every deadline from the send time is therefore
 * conservative, whatever the network delay was.
 */
import { InvalidRequest } from '../errors.js';

/**
 * Defaults chosen for issue 19's goal: kill -9 of the active node, then the first write on a new
 * active node within 3 s at p99. A crash costs at most `ttlMs` (the lease expires at the database)
 * plus `retryMs` (a standby's next attempt) plus the takeover itself: about 2.25 s and a takeover.
 * Vault's PostgreSQL lock has a 15 s TTL; this is what we beat. `renewMs` gives three renewals
 * (two may fail) before `ttlMs - marginMs`; `marginMs` covers clock drift and a slow stop of the
 * active role. `cooldownMs` is Vault's wait after sys/step-down; here it is polite rather than
 * absolute (issue 26 item 6): a node in cooldown still competes, but takes only a row that has been
 * free for `graceMs` (a retry and a half), so a standby wins first and a cluster whose every node stepped
 * down still has an active node within about a second. A node whose active role failed to start
 * (or whose storage failed while active) releases the row and backs off for `backoffMs`, doubling
 * at each failure in a row up to `backoffMaxMs` (issue 26 item 1); serving that long resets it.
 */
export const DEFAULT_LEASE_OPTIONS = {
  ttlMs: 2000,
  renewMs: 500,
  retryMs: 250,
  marginMs: 500,
  cooldownMs: 10_000,
  graceMs: 375,
  backoffMs: 2000,
  backoffMaxMs: 30_000,
} as const;

export interface LeaseOptions {
  /** How long the database keeps the lock row after its last renewal. */
  readonly ttlMs: number;
  /** How often the active node renews. */
  readonly renewMs: number;
  /** How often a standby tries to take the lock row (and an active node retries a failed renew). */
  readonly retryMs: number;
  /** The active role stops this long before the lease could expire at the database. */
  readonly marginMs: number;
  /** After sys/step-down, how long the node competes only politely (for a row free `graceMs`). */
  readonly cooldownMs: number;
  /** How long a row must have been free before a polite attempt takes it. */
  readonly graceMs: number;
  /** After the first failure to become active, how long the node does not compete. */
  readonly backoffMs: number;
  /** The longest backoff; serving as the active node this long forgets earlier failures. */
  readonly backoffMaxMs: number;
}

/**
 * Options with defaults filled in, validated: every problem is named in one InvalidRequest.
 * `renewMs < ttlMs - marginMs` so at least one renewal is due before the active role must stop.
 */
export function leaseOptions(given: Partial<LeaseOptions> = {}): LeaseOptions {
  const o: LeaseOptions = { ...DEFAULT_LEASE_OPTIONS, ...given };
  const problems: string[] = [];
  for (const [name, value] of Object.entries(o)) {
    if (!Number.isSafeInteger(value) || value < 0) problems.push(`${name} must be a whole number of ms >= 0, got ${String(value)}`);
  }
  if (problems.length === 0) {
    if (o.ttlMs <= 0 || o.renewMs <= 0 || o.retryMs <= 0) problems.push('ttlMs, renewMs and retryMs must be > 0');
    if (o.backoffMaxMs < o.backoffMs) problems.push(`backoffMaxMs (${o.backoffMaxMs}) must be >= backoffMs (${o.backoffMs})`);
    if (o.marginMs >= o.ttlMs) problems.push(`marginMs (${o.marginMs}) must be < ttlMs (${o.ttlMs})`);
    else if (o.renewMs >= o.ttlMs - o.marginMs) {
      problems.push(`renewMs (${o.renewMs}) must be < ttlMs - marginMs (${o.ttlMs - o.marginMs}): the lease would lapse between renewals`);
    }
  }
  if (problems.length > 0) throw new InvalidRequest(problems.map((p) => `HA lease: ${p}`));
  return o;
}

/** The active node as another node knows it from the lock row. */
export interface Leader {
  readonly holder: string;
  readonly apiAddr: string;
  readonly clusterAddr: string;
}

/**
 * One lock-row request of this node: asked for by an effect but not yet sent, or sent at `sentAt`.
 * Only a success carrying that exact `sentAt` is this request's answer; any other is stale. Two
 * requests sent in the same ms (a seal and unseal between them) cannot be told apart; the fence
 * still refuses any commit under an epoch that is not the lease's.
 */
export type InFlight = { readonly phase: 'asked' } | { readonly phase: 'sent'; readonly sentAt: number };

/** Why this node last failed to serve as the active node, and until when it does not compete. */
export interface ActivationFailure {
  readonly reason: string;
  readonly at: number;
  readonly until: number;
}

interface Common {
  readonly options: LeaseOptions;
  /** The highest epoch this node ever held; an `acquired` at or below it is stale. 0: none yet. */
  readonly epoch: number;
  /** Failures to become (or stay) active in a row, without serving `backoffMaxMs` between. */
  readonly failures?: number;
  readonly lastFailure?: ActivationFailure;
  /**
   * Set while another live process of the cluster holds this node's identity (the same node id):
   * the node does not compete until it holds its identity again. Says who holds it.
   */
  readonly excluded?: string;
}

export interface Sealed extends Common {
  readonly mode: 'sealed';
}

export interface Standby extends Common {
  readonly mode: 'standby';
  readonly leader: Leader | undefined;
  /** The next acquire attempt is due at this time; 0 means at the next tick. */
  readonly nextAttemptAt: number;
  readonly acquire: InFlight | null;
}

export interface Active extends Common {
  readonly mode: 'active';
  readonly holder: string;
  /** When this node became active (the send time of the acquire that won). */
  readonly since: number;
  /** The send time of the last acquire or renew the database accepted: the lease's safe start. */
  readonly renewedFrom: number;
  readonly nextRenewAt: number;
  readonly renew: InFlight | null;
}

/** After sys/step-down: a standby whose attempts are polite until `until`. */
export interface Cooldown extends Common {
  readonly mode: 'cooldown';
  readonly until: number;
  readonly leader: Leader | undefined;
  readonly nextAttemptAt: number;
  readonly acquire: InFlight | null;
}

export type State = Sealed | Standby | Active | Cooldown;
export type Mode = State['mode'];

export type Event =
  | { readonly type: 'unsealed'; readonly now: number }
  | { readonly type: 'sealed' }
  | { readonly type: 'tick'; readonly now: number }
  | { readonly type: 'acquireSent'; readonly now: number }
  | { readonly type: 'acquired'; readonly epoch: number; readonly holder: string; readonly sentAt: number }
  // Another node holds the row (leader named), or the attempt failed or could not be sent
  // (leader undefined). Failures carry no send time: they end whatever request is in flight.
  | { readonly type: 'acquireLost'; readonly leader: Leader | undefined }
  | { readonly type: 'renewSent'; readonly now: number }
  | { readonly type: 'renewed'; readonly sentAt: number }
  // The database said another holder or epoch holds the row, or the row is gone.
  | { readonly type: 'renewFailed'; readonly now: number }
  // The database could not be reached; the lease may still be ours until the deadline.
  | { readonly type: 'renewError'; readonly now: number }
  // A commit found this epoch's lease not current: someone else has taken over.
  | { readonly type: 'fenceRefused'; readonly epoch: number }
  // The lease keeper's thread renewed the row under this epoch; it sent the request at `sentAt`.
  | { readonly type: 'leaseExtended'; readonly epoch: number; readonly sentAt: number }
  // The active role of this epoch failed to start, or storage failed under it: release and back off.
  | { readonly type: 'activationFailed'; readonly epoch: number; readonly now: number; readonly reason: string }
  // Another live process holds this node's identity (`by` names it): stop competing.
  | { readonly type: 'identityTaken'; readonly now: number; readonly by: string }
  // This process holds its identity again (its echo was accepted).
  | { readonly type: 'identityHeld'; readonly now: number }
  | { readonly type: 'stepDown'; readonly now: number };

export type EventType = Event['type'];

export const StopReason = {
  renewDeadline: 'renew-deadline',
  leaseLost: 'lease-lost',
  fenced: 'fenced',
  stepDown: 'step-down',
  sealed: 'sealed',
  activationFailed: 'activation-failed',
  identityTaken: 'identity-taken',
} as const;
export type StopReason = (typeof StopReason)[keyof typeof StopReason];

/**
 * Effects run in list order. `stopActive` always comes first in a list that has it: the active
 * role stops before anything else happens.
 */
export type Effect =
  /**
   * Try to take the lock row; step `acquireSent` just before sending, then the answer. With
   * `graceMs` (a cooldown) the attempt is polite: it takes only a row missing or free that long,
   * never this node's own live row.
   */
  | { readonly type: 'tryAcquire'; readonly graceMs?: number }
  /** Renew the lock row for this holder and epoch; step `renewSent` just before sending. */
  | { readonly type: 'renew' }
  /** Start the replication unit and open writes under this epoch (the fence checks it). */
  | { readonly type: 'becomeActive'; readonly epoch: number }
  /** Stop replication, close writes, forward from now on. */
  | { readonly type: 'stopActive'; readonly reason: StopReason }
  /** End the lock row's lease now if it still holds this epoch, so a standby need not wait for the TTL. */
  | { readonly type: 'release'; readonly epoch: number }
  /** Where standby requests go now; undefined: no active node known. */
  | { readonly type: 'leaderChanged'; readonly leader: Leader | undefined };

export type EffectType = Effect['type'];

export interface StepResult {
  readonly state: State;
  readonly effects: readonly Effect[];
}

export function initialState(options: LeaseOptions = DEFAULT_LEASE_OPTIONS): Sealed {
  return { mode: 'sealed', options, epoch: 0 };
}

/** The time at which an active node must have stopped: its lease may expire soon after. */
export function deadlineOf(s: Active): number {
  return s.renewedFrom + s.options.ttlMs - s.options.marginMs;
}

/** What sys/leader, sys/health and the HA metrics show of this node's machine. */
export interface Leadership {
  readonly mode: Mode;
  readonly isSelf: boolean;
  /** When this node became active; null unless it is. */
  readonly activeSince: number | null;
  /** The other node known to be active; undefined when this node is, or none is known. */
  readonly leader: Leader | undefined;
  /** ms since the lease's safe start (the last accepted renew's send time); null unless active. */
  readonly leaseAgeMs: number | null;
  /** The last failure to serve as active, while it still keeps this node from competing. */
  readonly backoff: ActivationFailure | undefined;
  /** Who holds this node's identity, while another process does. */
  readonly excluded: string | undefined;
}

export function leadership(s: State, now: number): Leadership {
  const backoff = s.lastFailure !== undefined && now < s.lastFailure.until ? s.lastFailure : undefined;
  const extra = { backoff, excluded: s.excluded };
  switch (s.mode) {
    case 'active':
      return { mode: s.mode, isSelf: true, activeSince: s.since, leader: undefined, leaseAgeMs: now - s.renewedFrom, ...extra };
    case 'standby':
      return { mode: s.mode, isSelf: false, activeSince: null, leader: s.leader, leaseAgeMs: null, ...extra };
    case 'sealed':
    case 'cooldown':
      return { mode: s.mode, isSelf: false, activeSince: null, leader: undefined, leaseAgeMs: null, ...extra };
  }
}

/** The fields every state carries over to the next. */
function common(s: State): Common {
  return {
    options: s.options,
    epoch: s.epoch,
    ...(s.failures !== undefined ? { failures: s.failures } : {}),
    ...(s.lastFailure !== undefined ? { lastFailure: s.lastFailure } : {}),
    ...(s.excluded !== undefined ? { excluded: s.excluded } : {}),
  };
}

const same = (state: State): StepResult => ({ state, effects: [] });

export function step(state: State, event: Event): StepResult {
  if (event.type === 'sealed') return seal(state);
  if (state.mode !== 'active' && event.type === 'identityTaken') return identityTaken(state, event.by);
  if (state.mode !== 'active' && event.type === 'identityHeld') return identityHeld(state, event.now);
  switch (state.mode) {
    case 'sealed':
      return event.type === 'unsealed' ? compete(state, event.now, undefined) : same(state);
    case 'standby':
    case 'cooldown':
      return stepStandby(state, event);
    case 'active':
      return stepActive(state, event);
  }
}

function seal(state: State): StepResult {
  const sealed: Sealed = { ...common(state), mode: 'sealed' };
  switch (state.mode) {
    case 'sealed':
      return same(state);
    case 'active':
      return { state: sealed, effects: [{ type: 'stopActive', reason: StopReason.sealed }, { type: 'release', epoch: state.epoch }] };
    case 'standby':
    case 'cooldown':
      return { state: sealed, effects: state.leader === undefined ? [] : [{ type: 'leaderChanged', leader: undefined }] };
  }
}

/**
 * Another process holds this node's identity: an active node stops and releases; no mode
 * competes until `identityHeld`. A sealed node stays sealed (it competes once unsealed and held).
 */
function identityTaken(state: State, by: string): StepResult {
  if (state.mode === 'sealed') return same({ ...state, excluded: by });
  if (state.mode === 'active') {
    const standby: Standby = { ...common(state), excluded: by, mode: 'standby', leader: undefined, nextAttemptAt: 0, acquire: null };
    return {
      state: standby,
      effects: [{ type: 'stopActive', reason: StopReason.identityTaken }, { type: 'release', epoch: state.epoch }, { type: 'leaderChanged', leader: undefined }],
    };
  }
  return same({ ...state, excluded: by });
}

function identityHeld(state: State, now: number): StepResult {
  if (state.excluded === undefined) return same(state);
  const { excluded: _gone, ...rest } = state;
  const next = rest as State;
  return next.mode === 'standby' || next.mode === 'cooldown' ? stepStandby(next, { type: 'tick', now }) : same(next);
}

/** Become a standby that tries at once (a tick at `now` asks for the first attempt), or once its backoff ends. */
function compete(from: State, now: number, leader: Leader | undefined): StepResult {
  const standby: Standby = { ...common(from), mode: 'standby', leader, nextAttemptAt: from.lastFailure?.until ?? 0, acquire: null };
  return stepStandby(standby, { type: 'tick', now });
}

/** A standby, or a node in cooldown: the same competing, polite in cooldown. */
type Waiting = Standby | Cooldown;

function stepStandby(s: Waiting, e: Event): StepResult {
  // The cooldown ends on the first event at or after `until`: an ordinary standby from then on,
  // with whatever request is in flight.
  if (s.mode === 'cooldown' && 'now' in e && e.now >= s.until) {
    const { until: _until, ...rest } = s;
    return stepStandby({ ...rest, mode: 'standby' }, e);
  }
  switch (e.type) {
    case 'tick':
      // One request in flight at a time: a tick asks only when none is.
      if (s.acquire !== null || e.now < s.nextAttemptAt || s.excluded !== undefined) return same(s);
      return {
        state: { ...s, acquire: { phase: 'asked' } },
        effects: [s.mode === 'cooldown' ? { type: 'tryAcquire', graceMs: s.options.graceMs } : { type: 'tryAcquire' }],
      };
    case 'acquireSent': {
      if (s.acquire?.phase !== 'asked') return same(s);
      // In cooldown, attempts come twice as often: a polite one takes the row soon after its grace.
      const every = s.mode === 'cooldown' ? Math.max(1, Math.floor(s.options.retryMs / 2)) : s.options.retryMs;
      return { state: { ...s, acquire: { phase: 'sent', sentAt: e.now }, nextAttemptAt: e.now + every }, effects: [] };
    }
    case 'acquired': {
      if (s.acquire?.phase !== 'sent' || s.acquire.sentAt !== e.sentAt || e.epoch <= s.epoch) return same(s);
      const active: Active = {
        ...common(s),
        mode: 'active',
        epoch: e.epoch,
        holder: e.holder,
        since: e.sentAt,
        renewedFrom: e.sentAt,
        nextRenewAt: e.sentAt + s.options.renewMs,
        renew: null,
      };
      return { state: active, effects: [{ type: 'becomeActive', epoch: e.epoch }] };
    }
    case 'acquireLost': {
      // A failure ends the request in flight even before it was sent (the driver could not send
      // it), so the next tick may try again; only successes must name their request's send time.
      if (s.acquire === null) return same(s);
      const next: Waiting = { ...s, acquire: null, leader: e.leader };
      return { state: next, effects: sameLeader(s.leader, e.leader) ? [] : [{ type: 'leaderChanged', leader: e.leader }] };
    }
    case 'unsealed':
    case 'sealed':
    case 'renewSent':
    case 'renewed':
    case 'renewFailed':
    case 'renewError':
    case 'fenceRefused':
    case 'activationFailed':
    case 'identityTaken':
    case 'identityHeld':
    case 'stepDown':
    case 'leaseExtended':
      // A standby has no lease to renew or give up; sys/step-down is forwarded to the active node.
      return same(s);
  }
}

function stepActive(s: Active, e: Event): StepResult {
  // SAFETY: an active node stops being active as soon as `now >= renewedFrom + ttlMs - marginMs`,
  // measured from when the last successful renew was SENT, so it stops before its lease can expire
  // at the database. Every event that carries a time checks this before anything else.
  // A failure of this epoch's role stops it too, and also backs off, whatever the time.
  if (e.type === 'activationFailed' && e.epoch === s.epoch) return activationFailed(s, e.now, e.reason);
  if ('now' in e && e.now >= deadlineOf(s)) return stop(s, StopReason.renewDeadline, e.now);
  switch (e.type) {
    case 'tick':
      if (s.renew !== null || e.now < s.nextRenewAt) return same(s);
      return { state: { ...s, renew: { phase: 'asked' } }, effects: [{ type: 'renew' }] };
    case 'renewSent':
      if (s.renew?.phase !== 'asked') return same(s);
      return { state: { ...s, renew: { phase: 'sent', sentAt: e.now } }, effects: [] };
    case 'renewed':
      if (s.renew?.phase !== 'sent' || s.renew.sentAt !== e.sentAt) return same(s);
      // Never backwards: the keeper may have renewed later than this request was sent.
      return { state: { ...s, renew: null, renewedFrom: Math.max(s.renewedFrom, e.sentAt), nextRenewAt: e.sentAt + s.options.renewMs }, effects: [] };
    case 'leaseExtended':
      // The database accepted a renewal of this holder and epoch sent at `sentAt`: the lease is
      // safe until sentAt + ttlMs, whoever sent it.
      if (e.epoch !== s.epoch || e.sentAt <= s.renewedFrom) return same(s);
      return same({ ...s, renewedFrom: e.sentAt });
    case 'renewError':
      // The lease may still be ours: retry soon, and the deadline above stops us if it is not.
      if (s.renew === null) return same(s);
      return { state: { ...s, renew: null, nextRenewAt: e.now + s.options.retryMs }, effects: [] };
    case 'renewFailed':
      // Another holder or epoch has the row (or it is gone): stop at once.
      return s.renew === null ? same(s) : stop(s, StopReason.leaseLost, e.now);
    case 'fenceRefused':
      // A commit under this epoch was refused: another node took over. Stop at once.
      return e.epoch === s.epoch ? stop(s, StopReason.fenced, undefined) : same(s);
    case 'activationFailed':
      return same(s);
    case 'stepDown': {
      // Polite at once: the first attempt may go out now, and takes only a row free for graceMs.
      const cooldown: Cooldown = { ...common(s), mode: 'cooldown', until: e.now + s.options.cooldownMs, leader: undefined, nextAttemptAt: 0, acquire: null };
      return {
        state: cooldown,
        effects: [{ type: 'stopActive', reason: StopReason.stepDown }, { type: 'release', epoch: s.epoch }, { type: 'leaderChanged', leader: undefined }],
      };
    }
    case 'unsealed':
    case 'sealed':
    case 'acquireSent':
    case 'acquired':
    case 'acquireLost':
    case 'identityHeld':
      return same(s);
    case 'identityTaken':
      return identityTaken(s, e.by);
  }
}

/** How long the next backoff lasts after `failures` failures in a row (0: the first). */
export function backoffOf(options: LeaseOptions, failures: number): number {
  return Math.min(options.backoffMaxMs, options.backoffMs * 2 ** Math.min(failures, 30));
}

/**
 * The active role could not start (or storage failed under it): stop it, give the row up at once
 * so another node takes over within a retry, and do not compete for a backoff that doubles at
 * each failure in a row. Having served `backoffMaxMs` since the last takeover forgets the earlier
 * failures. A node alone in its cluster competes again when the backoff ends.
 */
function activationFailed(s: Active, now: number, reason: string): StepResult {
  const before = now - s.since >= s.options.backoffMaxMs ? 0 : (s.failures ?? 0);
  const until = now + backoffOf(s.options, before);
  const standby: Standby = { ...common(s), failures: before + 1, lastFailure: { reason, at: now, until }, mode: 'standby', leader: undefined, nextAttemptAt: until, acquire: null };
  return {
    state: standby,
    effects: [{ type: 'stopActive', reason: StopReason.activationFailed }, { type: 'release', epoch: s.epoch }, { type: 'leaderChanged', leader: undefined }],
  };
}

/** Stop the active role and compete again: at once when the event told the time, else at the next tick. */
function stop(s: Active, reason: StopReason, now: number | undefined): StepResult {
  const standby: Standby = { ...common(s), mode: 'standby', leader: undefined, nextAttemptAt: 0, acquire: null };
  const next = now === undefined ? same(standby) : stepStandby(standby, { type: 'tick', now });
  return {
    state: next.state,
    effects: [{ type: 'stopActive', reason }, { type: 'leaderChanged', leader: undefined }, ...next.effects],
  };
}

function sameLeader(a: Leader | undefined, b: Leader | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.holder === b.holder && a.apiAddr === b.apiAddr && a.clusterAddr === b.clusterAddr;
}
