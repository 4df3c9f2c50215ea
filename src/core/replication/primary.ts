/**
 * The primary side of `step`: enabling a primary, its token registry, demote and disable.
 * Called through `step` in ./step.ts, which has already routed by mode.
 *
 *   stepPrimary(s, { type: 'issueToken', id: 'dc2', now, ttlMs: 30 * 60_000 })
 */
import { badClusterAddr, optionalClusterHostPort } from '../cluster-addr.js';
import { goDuration } from '../duration.js';
import { badRequest, wrongMode } from './describe.js';
import {
  lookupSecondary,
  TokenStatus,
  type Disabled,
  type Event,
  type Primary,
  type Secondary,
  type SecondaryEntry,
  type StepResult,
} from './types.js';

type PrimaryEvent = Extract<Event, { type: 'enablePrimary' }>;

/**
 * The longest an activation token may stay redeemable: 768h, Vault's default maximum token TTL
 * (and this node's default `max_lease_ttl`). A token is a credential to the primary's data and
 * keyring until it is used, so it must not be valid for years.
 */
export const MAX_ACTIVATION_TTL_MS = 768 * 3600 * 1000;

export function enablePrimary(s: Disabled, e: PrimaryEvent): StepResult {
  if (e.clusterId === '') return badRequest(e.type, 'the new cluster id is empty');
  // Vault's `https://host:port` or `host:port`, kept as `host:port` (what secondaries dial).
  const primaryClusterAddr = optionalClusterHostPort(e.primaryClusterAddr);
  if (primaryClusterAddr === undefined) return badRequest(e.type, badClusterAddr('primary_cluster_addr', e.primaryClusterAddr));
  const next: Primary = {
    kind: s.kind,
    mode: 'primary',
    clusterId: e.clusterId,
    primaryClusterAddr,
    secondaries: {},
  };
  // The CA exists before the state says primary, so a restart never serves without one.
  return { ok: true, state: next, effects: [{ type: 'createCa' }, { type: 'persist' }, { type: 'startServer' }] };
}

export function stepPrimary(s: Primary, e: Event): StepResult {
  switch (e.type) {
    case 'demote': {
      // Keeps the cluster id so it can rejoin the same set without a wipe; it holds no
      // credentials for any primary, hence demotedAfterFailover.
      const next: Secondary = {
        kind: s.kind,
        mode: 'secondary',
        clusterId: s.clusterId,
        secondaryId: null,
        primary: null,
        state: 'idle',
        demotedAfterFailover: true,
      };
      return { ok: true, state: next, effects: [{ type: 'stopServer' }, { type: 'persist' }, { type: 'dropCa' }] };
    }
    case 'disablePrimary':
      // Secondaries can no longer connect: the server stops and the CA that signed their
      // certificates is gone; a later enable gets a new cluster id and a new CA.
      return {
        ok: true,
        state: { kind: s.kind, mode: 'disabled' },
        effects: [{ type: 'stopServer' }, { type: 'persist' }, { type: 'dropCa' }],
      };
    case 'issueToken': {
      if (e.id === '') return badRequest(e.type, 'id must not be empty');
      if (!Number.isFinite(e.ttlMs) || e.ttlMs <= 0) return badRequest(e.type, 'ttl must be a positive duration');
      if (e.ttlMs > MAX_ACTIVATION_TTL_MS) {
        return badRequest(e.type, `ttl ${goDuration(e.ttlMs / 1000)} is longer than the ${goDuration(MAX_ACTIVATION_TTL_MS / 1000)} an activation token may live; ask for a shorter one`);
      }
      const used = lookupSecondary(s.secondaries, e.id);
      if (used !== undefined) {
        return badRequest(e.type, `the id "${e.id}" was already used (status ${used.status}); ids are unique, revoked ones included`);
      }
      const entry: SecondaryEntry = { status: TokenStatus.issued, issuedAt: e.now, expiresAt: e.now + e.ttlMs };
      return { ok: true, state: withEntry(s, e.id, entry), effects: [{ type: 'persist' }] };
    }
    case 'revokeSecondary': {
      const entry = lookupSecondary(s.secondaries, e.id);
      if (entry === undefined) return badRequest(e.type, `no secondary token was issued with id "${e.id}"`);
      if (entry.status === TokenStatus.revoked) return { ok: true, state: s, effects: [] };
      // Persist first: once the request succeeds, no restart may let this secondary back in.
      return {
        ok: true,
        state: withEntry(s, e.id, { ...entry, status: TokenStatus.revoked }),
        effects: [{ type: 'persist' }, { type: 'disconnect', id: e.id }],
      };
    }
    case 'secondaryActivated': {
      const entry = lookupSecondary(s.secondaries, e.id);
      if (entry === undefined) return badRequest(e.type, `no secondary token was issued with id "${e.id}"`);
      if (entry.status === TokenStatus.revoked) return badRequest(e.type, `the secondary "${e.id}" was revoked`);
      if (entry.status === TokenStatus.active) return badRequest(e.type, `the token for "${e.id}" was already used`);
      if (e.now >= entry.expiresAt) return badRequest(e.type, `the token for "${e.id}" has expired`);
      return {
        ok: true,
        state: withEntry(s, e.id, { ...entry, status: TokenStatus.active }),
        effects: [{ type: 'persist' }],
      };
    }
    default:
      return wrongMode(s, e.type);
  }
}

function withEntry(s: Primary, id: string, entry: SecondaryEntry): Primary {
  // A computed key defines an own property even for "__proto__", unlike plain assignment.
  return { ...s, secondaries: { ...s.secondaries, [id]: entry } };
}
