/**
 * What a primary may serve a secondary of each kind, in one place: which cluster calls an id may
 * make in each registry status, which Merkle subtrees and which key classes it may read. Every
 * cluster RPC goes through it (PrimaryStreamer), so a secondary certificate can never read more
 * than its kind replicates (REPLICATION.md section 1): node-class keys (the DR CA's private key,
 * the server key, the JWT signing key, DR operation tokens) are served to no one.
 *
 *   const policy = servePolicy('dr');
 *   policy.admitCall('token-issued', 'reconcile');   // throws PermissionDenied: bootstrap first
 *   policy.admitKeys(['node/replication/dr/state']);  // throws PermissionDenied
 *
 * The classes come from KIND_POLICY (Merkle subtrees per kind): DR serves the replicated and local
 * classes, performance the replicated class only.
 *
 * Performance paths filters narrow it per secondary: PrimaryStreamer passes the secondary's
 * `keyAllowed` (src/core/paths-filter.ts) as `admitsPath` for leaves and fetches; the stream and
 * the Merkle hashes are filtered in filtered-view.ts.
 */
import { PermissionDenied } from '../core/errors.js';
import type { Tree } from '../core/merkle.js';
import { KIND_POLICY, type Kind, type TokenStatus } from '../core/replication/index.js';
import { classify, type KeyClass, treeOf } from '../storage/keyspace.js';
import { classesOf } from './applier.js';
import type { ClusterCall } from './transport.js';


export interface ServePolicy {
  readonly kind: Kind;
  /** The key classes this kind replicates; never node. */
  readonly classes: readonly KeyClass[];
  /** Throws PermissionDenied unless an id in `status` may make `call`. */
  admitCall(status: TokenStatus, call: ClusterCall): void;
  servesTree(tree: Tree): boolean;
  /** Throws PermissionDenied unless this kind's secondaries may read Merkle subtree `tree`. */
  admitTree(tree: Tree): void;
  /** Throws PermissionDenied, naming the first offending key, unless every key may be served. */
  admitKeys(keys: Iterable<string>): void;
  /** Whether one key may be served (class, then the kind's path filter). */
  admits(key: string): boolean;
}

export function servePolicy(kind: Kind, admitsPath: (key: string) => boolean = () => true): ServePolicy {
  const classes = classesOf(kind);
  const trees = new Set(classes.map(treeOf));
  const admits = (key: string): boolean => classes.includes(classify(key)) && admitsPath(key);
  return {
    kind,
    classes,
    admitCall(status, call) {
      if (status === 'revoked') throw new PermissionDenied('this secondary was revoked');
      // Only a kind whose secondaries serve clients forwards writes (a DR secondary serves none).
      if (call === 'forward' && !KIND_POLICY[kind].forwardsWrites) throw new PermissionDenied(`${KIND_POLICY[kind].label} secondaries do not forward writes`);
      // Only the handshake (and the address probe) may precede activation: the first successful
      // bootstrap marks the id active, and nothing that reads data is served before that.
      if (status !== 'active' && call !== 'bootstrap' && call !== 'ping') {
        throw new PermissionDenied('this secondary has not completed its bootstrap; nothing is served before it');
      }
    },
    servesTree: (tree) => trees.has(tree),
    admitTree(tree) {
      if (!trees.has(tree)) throw new PermissionDenied(`Merkle subtree ${tree} is not replicated to ${kind} secondaries`);
    },
    admitKeys(keys) {
      for (const key of keys) {
        if (!admits(key)) {
          throw new PermissionDenied(`key ${JSON.stringify(key.slice(0, 80))} (${classify(key)} class) is not replicated to ${kind} secondaries`);
        }
      }
    },
    admits,
  };
}
