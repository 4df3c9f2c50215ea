/**
 * The secondary side of `step`: secondary enable and activation, promote, disable, update-primary
 * and the stream state. Called through `step` in ./step.ts, which has already routed by mode.
 *
 *   stepSecondary(s, { type: 'updatePrimary', token: '' })   // forget the primary, stay secondary
 */
import { badClusterAddr, clusterHostPort, optionalClusterHostPort } from '../cluster-addr.js';
import { badRequest, kindLabel, wrongMode } from './describe.js';
import type {
  Activation,
  Behind,
  Bootstrapping,
  Disabled,
  Effect,
  Event,
  Primary,
  PrimaryAddrs,
  Secondary,
  StepResult,
} from './types.js';

type Redeemed = Extract<Event, { type: 'redeemed' }>;

/** secondary/enable was accepted earlier; its token is now redeemed. */
export function beginActivation(s: Disabled, e: Redeemed): StepResult {
  const a = e.activation;
  if (a.clusterId === '' || a.secondaryId === '') return badRequest(e.type, 'the token carries no cluster id or secondary id');
  const next: Bootstrapping = {
    kind: s.kind,
    mode: 'bootstrapping',
    clusterId: a.clusterId,
    secondaryId: a.secondaryId,
    primary: addrsOf(a),
  };
  // The wipe follows persist: a crash mid-wipe restarts in bootstrapping, and `resume` wipes again.
  return { ok: true, state: next, effects: [{ type: 'persist' }, { type: 'wipe' }, { type: 'connect', primary: next.primary }] };
}

export function stepBootstrapping(s: Bootstrapping, e: Event): StepResult {
  switch (e.type) {
    case 'activated': {
      const next: Secondary = {
        kind: s.kind,
        mode: 'secondary',
        clusterId: s.clusterId,
        secondaryId: s.secondaryId,
        primary: s.primary,
        state: 'idle',
        demotedAfterFailover: false,
      };
      return { ok: true, state: next, effects: [{ type: 'persist' }] };
    }
    case 'activationFailed':
    // The operator's way out of a bootstrap that cannot finish (primary gone for good): without
    // it bootstrapping would be a state no operation can leave.
    case 'disableSecondary':
      // Storage is already wiped; the honest state is disabled, and a new token is needed.
      return {
        ok: true,
        state: { kind: s.kind, mode: 'disabled' },
        effects: [{ type: 'disconnectPrimary' }, { type: 'persist' }, { type: 'forgetPrimary' }],
      };
    default:
      return wrongMode(s, e.type);
  }
}

export function stepSecondary(s: Secondary, e: Event): StepResult {
  switch (e.type) {
    case 'promote':
      return promote(s, e);
    case 'disableSecondary':
      return detached(s, { kind: s.kind, mode: 'disabled' }, [{ type: 'persist' }, ...forget(s)]);
    case 'updatePrimary':
      return updatePrimary(s, e);
    case 'redeemed': {
      const a = e.activation;
      if (a.clusterId !== s.clusterId) {
        return badRequest(
          e.type,
          `the token belongs to replication set "${a.clusterId}" but this secondary belongs to "${s.clusterId}"; ` +
            'joining another set needs secondary/disable, then secondary/enable, which wipes storage',
        );
      }
      const primary = addrsOf(a);
      // A new id: what the primary serves it (its paths filter) is not what the old id was served.
      const next: Secondary = { ...s, secondaryId: a.secondaryId, primary, state: 'idle', demotedAfterFailover: false };
      return detached(s, next, [{ type: 'resync' }, { type: 'persist' }, { type: 'connect', primary }]);
    }
    case 'probed':
      if (s.demotedAfterFailover) return badRequest(e.type, demotedMessage(s));
      return attach(s, { ...s, primary: e.primary, state: 'idle' }, e.primary);
    case 'streamState':
      if (s.primary === null) return badRequest(e.type, 'this secondary is not connected to a primary');
      // Volatile: not persisted on its own, and `resume` starts every secondary at idle.
      return { ok: true, state: { ...s, state: e.state }, effects: [] };
    default:
      return wrongMode(s, e.type);
  }
}

/**
 * Why promote would refuse without `force`, or null when it would pass: the secondary knows it
 * is behind (`behind`), or is mid merkle-diff / merkle-sync. The one rule, shared by the state
 * machine and by anything that predicts its verdict (the CLI's `failover -plan`).
 */
export function promoteRefusal(state: string, behind: Behind | null): string | null {
  if (behind !== null && behind.primaryLast > behind.applied) {
    return (
      `the primary last reported WAL index ${behind.primaryLast} but this secondary has applied ${behind.applied} ` +
      `(${behind.primaryLast - behind.applied} entries behind)`
    );
  }
  return state === 'merkle-diff' || state === 'merkle-sync' ? `a ${state} is in progress` : null;
}

function promote(s: Secondary, e: Extract<Event, { type: 'promote' }>): StepResult {
  const primaryClusterAddr = optionalClusterHostPort(e.primaryClusterAddr);
  if (primaryClusterAddr === undefined) return badRequest(e.type, badClusterAddr('primary_cluster_addr', e.primaryClusterAddr));
  if (!e.force) {
    const reason = promoteRefusal(s.state, e.behind);
    if (reason !== null) {
      return {
        ok: false,
        error: {
          code: 'invalid_request',
          message:
            `replication is still catching up: ${reason}; retry once it has caught up, ` +
            'or promote with force=true, which may lose data not yet replicated',
        },
      };
    }
  }
  // Same set id; a fresh CA and an empty registry, so every other secondary needs a new token.
  const next: Primary = {
    kind: s.kind,
    mode: 'primary',
    clusterId: s.clusterId,
    primaryClusterAddr,
    secondaries: {},
  };
  // The fork starts only after the old primary's stream is closed (in `detached`): an entry
  // applied after newEpoch would belong to neither history.
  return detached(s, next, [{ type: 'newEpoch' }, { type: 'createCa' }, { type: 'persist' }, { type: 'startServer' }]);
}

function updatePrimary(s: Secondary, e: Extract<Event, { type: 'updatePrimary' }>): StepResult {
  if (e.token !== undefined && e.addrs !== undefined) {
    return badRequest(e.type, 'token and update_primary_addrs are mutually exclusive; send exactly one');
  }
  if (e.token === '') {
    const next: Secondary = { ...s, primary: null, state: 'idle' };
    return detached(s, next, [{ type: 'persist' }, ...forget(s)]);
  }
  // Validated before the token is spent: the driver redeems it only on this effect.
  if (e.token !== undefined) return { ok: true, state: s, effects: [{ type: 'redeem' }] };
  if (e.addrs === undefined) return badRequest(e.type, 'one of token or update_primary_addrs is required');
  if (s.demotedAfterFailover) return badRequest(e.type, demotedMessage(s));
  if (e.addrs.length === 0 || e.addrs.some((a) => a === '')) {
    return badRequest(e.type, 'update_primary_addrs must list one or more non-empty cluster addresses');
  }
  // Vault's `https://host:port` or `host:port`; probed and recorded as `host:port`.
  const addrs: string[] = [];
  for (const a of e.addrs) {
    const hp = clusterHostPort(a);
    if (hp === undefined) return badRequest(e.type, badClusterAddr('update_primary_addrs', a));
    addrs.push(hp);
  }
  return { ok: true, state: s, effects: [{ type: 'probe', addrs }] };
}

/** Moves to a new primary: the old stream closes before the switch is recorded. */
function attach(s: Secondary, next: Secondary, primary: PrimaryAddrs): StepResult {
  return detached(s, next, [{ type: 'persist' }, { type: 'connect', primary }]);
}

/** Prefixes `after` with closing the channel to the current primary, when there is one. */
function detached(s: Secondary, next: Secondary | Primary | Disabled, after: readonly Effect[]): StepResult {
  const close: Effect[] = s.primary === null ? [] : [{ type: 'disconnectPrimary' }];
  return { ok: true, state: next, effects: [...close, ...after] };
}

/** A secondary whose primary is null has already dropped its credentials. */
function forget(s: Secondary): Effect[] {
  return s.primary === null ? [] : [{ type: 'forgetPrimary' }];
}

function demotedMessage(s: Secondary): string {
  return (
    `update_primary_addrs is not allowed for a newly demoted ${kindLabel(s)} secondary, which holds no ` +
    'credentials for any primary; use a token from the new primary (primary/secondary-token there)'
  );
}

function addrsOf(a: Activation): PrimaryAddrs {
  return { clusterAddr: a.primaryClusterAddr, apiAddr: a.primaryApiAddr };
}
