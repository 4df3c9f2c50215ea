/**
 * What a node persists about its role in one kind of replication: the state machine's state plus
 * the key material that state needs, as a union discriminated by mode, so no field is "only valid
 * in some modes". Where it lives and in which class is the kind's (KIND_POLICY.record): DR's is a
 * node-class record, performance's a local-class one (its DR secondaries hold it). Either is
 * encrypted by the barrier; a small plaintext summary (the mode only) lives in a system record so a
 * sealed node can still say what it is.
 *
 *   const rec = await loadRecord(store, 'performance'); rec.state.mode
 *   await saveRecord(store, composeRecord(state, material));
 */
import type { JWK } from 'jose';
import { Internal } from '../core/errors.js';
import { initialState, KIND_POLICY, type Bootstrapping, type Disabled, type Kind, type Primary, type Secondary, type State } from '../core/replication/index.js';
import type { Store } from '../storage/store.js';

/** Where DR's record lives (KIND_POLICY.dr.record.key). */
export const RECORD_KEY = KIND_POLICY.dr.record.key;

export interface PrimaryMaterial {
  readonly caCertPem: string;
  readonly caKeyPem: string;
  readonly serverCertPem: string;
  readonly serverKeyPem: string;
  readonly serverName: string;
  readonly signing: { readonly privateJwk: JWK; readonly publicJwk: JWK };
  /** Secondary id -> SHA-256 fingerprint of the client certificate issued for it. */
  readonly certs: Readonly<Record<string, string>>;
  /**
   * Secondary id -> accessor of the wrapping token that carries its bundle, so revoking the id
   * also invalidates the token before anyone redeems it (absent for sealed tokens).
   */
  readonly wrapAccessors: Readonly<Record<string, string>>;
}

export interface SecondaryMaterial {
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  readonly serverName: string;
  /** Every node of the primary cluster this secondary knows of (primary-addrs.ts), bounded. */
  readonly knownPrimaryClusterAddrs: readonly string[];
  /** The node of the primary cluster it last connected to; dialled first after a restart. */
  readonly connectedPrimaryClusterAddr?: string;
}

export interface BoxKey {
  readonly publicKeyB64: string;
  readonly secretKeyB64: string;
}

/** The persisted record, by mode. */
export type RoleRecord =
  | {
      readonly state: Disabled;
      /** From secondary/generate-public-key, kept until activation. */
      readonly boxKey: BoxKey | null;
      /** Why the last activation ended in `disabled` (the primary refused it after the wipe). */
      readonly lastError: string | null;
    }
  | { readonly state: Primary; readonly primary: PrimaryMaterial }
  /** `secondary`: null once forgotten (blank token) or for a demoted primary that has no token yet. */
  | { readonly state: Secondary; readonly secondary: SecondaryMaterial | null }
  /** `secondary`: null until the redeemed bundle's credentials are stored (the first connect). */
  | { readonly state: Bootstrapping; readonly secondary: SecondaryMaterial | null };

/**
 * What the driver holds while effects run: the state and every piece of material it may be
 * building. Between two effects of one step it may be incomplete (createCa follows the state's
 * move to primary); `composeRecord` at persist time takes what the mode needs.
 */
export interface Workbench {
  readonly state: State;
  readonly primary?: PrimaryMaterial | undefined;
  readonly secondary?: SecondaryMaterial | undefined;
  readonly boxKey?: BoxKey | undefined;
  readonly lastError?: string | undefined;
}

export function composeRecord(w: Workbench): RoleRecord {
  const s = w.state;
  switch (s.mode) {
    case 'disabled':
      return { state: s, boxKey: w.boxKey ?? null, lastError: w.lastError ?? null };
    case 'primary':
      if (!w.primary) throw new Internal(`${KIND_POLICY[s.kind].label} primary has no CA material to persist`);
      return { state: s, primary: w.primary };
    case 'secondary':
    case 'bootstrapping':
      return { state: s, secondary: w.secondary ?? null } as RoleRecord;
  }
}

/** The workbench of a persisted record (also reads records written before the union). */
export function workbenchOf(rec: RoleRecord): Workbench {
  const r = rec as Partial<{ primary: PrimaryMaterial; secondary: SecondaryMaterial | null; boxKey: BoxKey | null; lastError: string | null }> & { state: State };
  switch (r.state.mode) {
    case 'disabled':
      return { state: r.state, boxKey: r.boxKey ?? undefined, lastError: r.lastError ?? undefined };
    case 'primary':
      return { state: r.state, primary: r.primary ? { ...r.primary, wrapAccessors: r.primary.wrapAccessors ?? {} } : undefined };
    case 'secondary':
    case 'bootstrapping':
      return { state: r.state, secondary: r.secondary ?? undefined };
  }
}

export async function loadRecord(store: Store, kind: Kind): Promise<RoleRecord> {
  const raw = await store.get(KIND_POLICY[kind].record.key);
  if (!raw) return { state: initialState(kind), boxKey: null, lastError: null };
  return JSON.parse(raw.toString('utf8')) as RoleRecord;
}

export async function saveRecord(store: Store, rec: RoleRecord): Promise<void> {
  await store.commit([{ type: 'put', key: KIND_POLICY[rec.state.kind].record.key, value: Buffer.from(JSON.stringify(rec)) }]);
}

/** The replication modes and cluster id sys/health reports, as the role records in storage hold them. */
export interface RecordedModes {
  readonly dr: string;
  readonly performance: string;
  readonly clusterId: string;
}

/**
 * What the node writing `store` reports about its replication (ReplicationUnit.mode): an HA
 * standby reads it from the records the active node keeps, rather than from a unit that runs only
 * on the active node. A DR secondary holds no performance role of its own: `disabled`.
 */
export async function recordedModes(store: Store): Promise<RecordedModes> {
  const dr = (await loadRecord(store, 'dr')).state;
  const performance = (await loadRecord(store, 'performance')).state;
  const shown = (s: State): string => (s.mode === 'bootstrapping' ? 'secondary' : s.mode);
  return {
    dr: shown(dr),
    performance: dr.mode === 'secondary' || dr.mode === 'bootstrapping' ? 'disabled' : shown(performance),
    clusterId: dr.mode === 'disabled' ? '' : dr.clusterId,
  };
}
