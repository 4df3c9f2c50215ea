/**
 * What a state allows and how it reads: the event types each mode accepts, the refusal messages
 * that name the mode and the routes open from it, and the `mode`/`state` status fields of WIRE.md.
 *
 *   allowedEvents(s)          // ['demote', 'disablePrimary', ...]
 *   statusFields(s)           // { mode: 'secondary', state: 'stream-wals', cluster_id, ... }
 *   throw refusalError(r.error)   // InvalidRequest (400)
 */
import { InvalidRequest, type TesseraError } from '../errors.js';
import { KIND_POLICY } from './policy.js';
import {
  lookupSecondary,
  TokenStatus,
  type EventType,
  type Mode,
  type Refusal,
  type Refused,
  type SecondaryState,
  type State,
} from './types.js';

const ALLOWED: Readonly<Record<Mode, readonly EventType[]>> = {
  disabled: ['enablePrimary', 'enableSecondary', 'redeemed'],
  primary: ['demote', 'disablePrimary', 'issueToken', 'revokeSecondary', 'secondaryActivated'],
  secondary: ['promote', 'disableSecondary', 'updatePrimary', 'redeemed', 'probed', 'streamState'],
  bootstrapping: ['activated', 'activationFailed', 'disableSecondary'],
};

/** The route, relative to `sys/replication/<kind>/`, of each operator intent; facts have none. */
export const ROUTES: Readonly<Partial<Record<EventType, string>>> = {
  enablePrimary: 'primary/enable',
  demote: 'primary/demote',
  disablePrimary: 'primary/disable',
  issueToken: 'primary/secondary-token',
  revokeSecondary: 'primary/revoke-secondary',
  enableSecondary: 'secondary/enable',
  promote: 'secondary/promote',
  disableSecondary: 'secondary/disable',
  updatePrimary: 'secondary/update-primary',
};

const VERBS: Readonly<Record<EventType, string>> = {
  enablePrimary: 'enable a primary',
  demote: 'demote',
  disablePrimary: 'disable the primary',
  issueToken: 'issue a secondary token',
  revokeSecondary: 'revoke a secondary',
  enableSecondary: 'enable a secondary',
  promote: 'promote',
  disableSecondary: 'disable the secondary',
  updatePrimary: 'update the primary',
  secondaryActivated: 'activate a secondary',
  redeemed: 'apply an activation token',
  probed: 'switch to a probed primary',
  activated: 'finish activation',
  activationFailed: 'abandon activation',
  streamState: 'record the stream state',
};

/** The event types `step` may accept in this state's mode (it may still refuse on the details). */
export function allowedEvents(state: State): readonly EventType[] {
  return ALLOWED[state.mode];
}

export function kindLabel(state: State): string {
  return KIND_POLICY[state.kind].label;
}

/** "this cluster is a DR primary" and the like. */
export function describeState(state: State): string {
  const kind = kindLabel(state);
  switch (state.mode) {
    case 'disabled':
      return `this cluster has ${kind} replication disabled`;
    case 'primary':
      return `this cluster is a ${kind} primary`;
    case 'secondary':
      if (state.demotedAfterFailover) return `this cluster is a demoted ${kind} primary, now a secondary with no primary`;
      return state.primary === null
        ? `this cluster is a ${kind} secondary with no primary`
        : `this cluster is a ${kind} secondary`;
    case 'bootstrapping':
      return `this cluster is activating as a ${kind} secondary`;
  }
}

/** The refusal for an event that this mode does not accept at all. */
export function wrongMode(state: State, type: EventType): Refused {
  const routes = ALLOWED[state.mode].flatMap((t) => ROUTES[t] ?? []);
  const open =
    routes.length === 0
      ? `from ${state.mode} no operation is accepted until activation finishes`
      : `from ${state.mode} you may call ${routes.join(', ')}`;
  return { ok: false, error: { code: 'invalid_request', message: `cannot ${VERBS[type]}: ${describeState(state)}; ${open}` } };
}

/** A refusal of an event the mode accepts, for a reason specific to the request. */
export function badRequest(type: EventType, reason: string): Refused {
  return { ok: false, error: { code: 'invalid_request', message: `cannot ${VERBS[type]}: ${reason}` } };
}

export function refusalError(refusal: Refusal): TesseraError {
  return new InvalidRequest(refusal.message);
}

/**
 * The status fields that follow from the state alone, named as WIRE.md section 3 names them. The
 * driver adds the rest (WAL positions, Merkle root, heartbeats) and replaces an empty
 * `primary_cluster_addr` of a primary with its configured cluster address.
 */
export type StatusFields =
  | { readonly mode: 'disabled'; readonly state: 'idle' }
  | {
      readonly mode: 'primary';
      readonly state: 'running';
      readonly cluster_id: string;
      readonly primary_cluster_addr: string;
      /** Ids that were issued and not revoked. */
      readonly known_secondaries: readonly string[];
    }
  | {
      readonly mode: 'secondary' | 'bootstrapping';
      readonly state: SecondaryState;
      readonly cluster_id: string;
      readonly secondary_id: string;
      readonly primary_cluster_addr: string;
    };

export function statusFields(state: State): StatusFields {
  switch (state.mode) {
    case 'disabled':
      return { mode: 'disabled', state: 'idle' };
    case 'primary':
      return {
        mode: 'primary',
        state: 'running',
        cluster_id: state.clusterId,
        primary_cluster_addr: state.primaryClusterAddr,
        known_secondaries: Object.keys(state.secondaries).filter(
          (id) => lookupSecondary(state.secondaries, id)?.status !== TokenStatus.revoked,
        ),
      };
    case 'secondary':
      return {
        mode: 'secondary',
        state: state.state,
        cluster_id: state.clusterId,
        secondary_id: state.secondaryId ?? '',
        primary_cluster_addr: state.primary?.clusterAddr ?? '',
      };
    case 'bootstrapping':
      return {
        mode: 'bootstrapping',
        state: 'idle',
        cluster_id: state.clusterId,
        secondary_id: state.secondaryId,
        primary_cluster_addr: state.primary.clusterAddr,
      };
  }
}
