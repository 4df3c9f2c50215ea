/**
 * The one table of what differs between the two kinds of replication. Everything not named here
 * is shared: the state machine, the driver, the routes, the stream and reconciliation.
 *
 *   const p = KIND_POLICY[state.kind];
 *   p.trees        // Merkle subtrees a secondary of this kind streams and reconciles
 *   p.record.key   // where the role record lives (p.record.keyClass says in which class)
 */
import { Kind } from './types.js';

export interface KindPolicy {
  readonly kind: Kind;
  /** How messages name the kind. */
  readonly label: 'DR' | 'performance';
  /**
   * Merkle subtrees streamed and reconciled: 1 replicated class, 2 local class (REPLICATION.md 1).
   * Activation wipes all data once for both kinds; afterwards a DR secondary mirrors both classes,
   * and a performance secondary's stream and reconciliation touch tree 1 only, never its own local
   * class (tokens, local mounts).
   */
  readonly trees: readonly (1 | 2)[];
  /**
   * The role record (state machine state plus key material). DR: node class, never replicated.
   * Performance: local class, so the DR secondaries of a performance primary hold it and a
   * promoted one takes over the performance set (REPLICATION.md 6).
   */
  readonly record: { readonly key: string; readonly keyClass: 'node' | 'local' };
  /** Plaintext system record with the mode only, so a sealed node can still say what it is. */
  readonly modeSummary: string;
  /** Last heartbeats kept across restarts (node class: this node's view of its peers). */
  readonly lastSeen: { readonly secondaries: string; readonly primary: string };
  /**
   * Authorization of secondary promote, disable and update-primary: a DR secondary serves no
   * other authentication, so a DR operation token; a performance secondary has its own tokens,
   * so a token with sudo.
   */
  readonly secondaryAuth: 'dr-operation-token' | 'sudo';
  /** Whether the primary applies per-secondary path filters (REPLICATION.md 8). */
  readonly filters: boolean;
  /**
   * How a secondary applies what it receives. 'primary-wal': the primary's entries become its own
   * WAL (an exact standby). 'own-wal': applied and re-committed into its own WAL with the upstream
   * guard kept beside them, so local writes interleave.
   */
  readonly apply: 'primary-wal' | 'own-wal';
  /**
   * Whether a secondary of this kind forwards writes of replicated paths to its primary over the
   * cluster channel (performance: it serves clients; DR: it serves none). The primary refuses the
   * Forward call from secondaries of a kind that does not.
   */
  readonly forwardsWrites: boolean;
  /** License feature gating the kind's endpoints (src/license Feature). */
  readonly license: 'dr-replication' | 'performance-replication';
  /** Status field carrying the primary's last WAL index (WIRE.md 3). */
  readonly lastWalField: 'last_dr_wal' | 'last_performance_wal';
}

export const KIND_POLICY: Readonly<Record<Kind, KindPolicy>> = {
  dr: {
    kind: 'dr',
    label: 'DR',
    trees: [1, 2],
    record: { key: 'node/replication/dr/state', keyClass: 'node' },
    modeSummary: 'replication-dr-mode',
    lastSeen: { secondaries: 'node/replication/dr/last-heartbeats', primary: 'node/replication/dr/primary-last-heartbeat' },
    secondaryAuth: 'dr-operation-token',
    filters: false,
    apply: 'primary-wal',
    forwardsWrites: false,
    license: 'dr-replication',
    lastWalField: 'last_dr_wal',
  },
  performance: {
    kind: 'performance',
    label: 'performance',
    trees: [1],
    record: { key: 'local/replication/performance/state', keyClass: 'local' },
    modeSummary: 'replication-performance-mode',
    lastSeen: { secondaries: 'node/replication/performance/last-heartbeats', primary: 'node/replication/performance/primary-last-heartbeat' },
    secondaryAuth: 'sudo',
    filters: true,
    apply: 'own-wal',
    forwardsWrites: true,
    license: 'performance-replication',
    lastWalField: 'last_performance_wal',
  },
};

/** Every kind, in the order status, metrics and events list them. */
export const KINDS = [Kind.dr, Kind.performance] as const satisfies readonly Kind[];

/** The other kind: each kind's rules across kinds name it. */
export function otherKind(kind: Kind): Kind {
  return kind === Kind.dr ? Kind.performance : Kind.dr;
}

/** Modes as far as the rules across kinds need them. */
type ModeOf = 'disabled' | 'primary' | 'secondary' | 'bootstrapping';

/**
 * Rules across kinds, checked before the kind's own step (a refusal changes nothing):
 * - a DR secondary has no performance role of its own (it holds its primary's, inert, and loads
 *   it when promoted), so performance operations are refused there;
 * - secondary enable wipes all data, so it is refused while the other kind holds a role the wipe
 *   would destroy (a performance secondary may still become a DR primary afterwards).
 * Returns the refusal message, or undefined when allowed.
 */
export function crossKindRefusal(kind: Kind, intent: 'enableSecondary' | 'other', other: ModeOf): string | undefined {
  if (kind === 'performance' && (other === 'secondary' || other === 'bootstrapping')) {
    return 'this cluster is a DR secondary: it has no performance replication role of its own (it takes over its primary\'s when promoted)';
  }
  if (intent === 'enableSecondary' && other !== 'disabled') {
    const otherLabel = KIND_POLICY[otherKind(kind)].label;
    return `${otherLabel} replication is ${other} on this cluster; enabling a ${KIND_POLICY[kind].label} secondary wipes all data, so disable ${otherLabel} replication first`;
  }
  return undefined;
}
