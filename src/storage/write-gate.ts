/**
 * Which writes the engine admits while a role change or a replication mode restricts them.
 *
 *   const gate = new WriteGate();
 *   gate.fence(() => new Unavailable('demoting'), [roleKey]); // a primary draining for demote
 *   gate.admit(ops, false);                                    // throws the refusal, or returns
 *   gate.unfence();
 *   gate.guardReplicated(refusal);                             // a performance secondary
 *
 * The gate only decides; the engine calls `admit` before it queues a transaction, so a refused
 * write changes nothing and shares no batch. Key classes are keyspace.ts's.
 */
import type { WalOp } from '../core/wal.js';
import { KeyClass, classify } from './keyspace.js';

export class WriteGate {
  /** Set while writes of tree-class keys are refused (a primary draining for demote). */
  private writeFence: { readonly refusal: () => Error; readonly passes: ReadonlySet<string> } | undefined;
  /** Set on a performance secondary: replicated-class keys change only from upstream. */
  private replicatedGuard: (() => Error) | undefined;

  /**
   * Throws the fence's refusal if any op is not node class and not named in the fence's passes,
   * then the replicated guard's refusal if any op is replicated class and not `upstream`.
   */
  admit(ops: readonly WalOp[], upstream: boolean): void {
    // Node-class records, and the keys the fence names (this node's own role record), stay
    // writable: the demote that fenced persists them while every other write stays refused.
    const fence = this.writeFence;
    if (fence !== undefined && ops.some((op) => classify(op.key) !== KeyClass.node && !fence.passes.has(op.key))) throw fence.refusal();
    if (this.replicatedGuard !== undefined && !upstream && ops.some((op) => classify(op.key) === KeyClass.replicated)) throw this.replicatedGuard();
  }

  fence(refusal: () => Error, passes: readonly string[]): void {
    this.writeFence = { refusal, passes: new Set(passes) };
  }

  unfence(): void {
    this.writeFence = undefined;
  }

  guardReplicated(refusal: (() => Error) | undefined): void {
    this.replicatedGuard = refusal;
  }
}
