/** Types of scripts/nemesis-check.mjs (the nemesis checker, pure). */
export type Outcome = 'ok' | 'error' | 'unknown';
export interface Op {
  id: number;
  client: string;
  kind: 'write' | 'read';
  node: string;
  forwarded?: boolean;
  mount: string;
  key: string;
  value?: string;
  start: number;
  end: number;
  outcome: Outcome;
  status?: number | string;
  version?: number;
  /** A read answered 404 with errors: the node said it has no such mount. */
  mountMissing?: boolean;
}
export type FaultType = 'kill' | 'pause' | 'partition' | 'partition-primary' | 'wal-behind' | 'failover' | 'filter';
export interface Fault { type: FaultType; target: string; holdMs: number; variant?: 'kill' | 'partition' | 'planned' | 'allow' | 'deny' }
export interface LossWindow { from: number; until: Record<string, number> }
export interface FilterSpan { mounts: string[]; from: number; to?: number }
export const FAULTS: readonly FaultType[];
export function prng(seed: number): { next(): number; int(lo: number, hi: number): number; pick<T>(xs: readonly T[]): T };
export function faultSchedule(seed: number, cycles: number, cycleMs: number, types?: readonly FaultType[]): Fault[];
export function inLossWindow(op: Op, windows: readonly LossWindow[]): boolean;
export interface Lost { key: string; id: number; value?: string; version: number | null; node: string; found: { value: string; version: number } | null; reason: string }
export function checkAcknowledged(
  ops: readonly Op[],
  finalData: Record<string, { value: string; version: number }>,
  opts?: { lossWindows?: readonly LossWindow[] },
): { acknowledged: number; lost: Lost[]; lostWrites: number; failoverLoss: number[]; lossPerWindow: number[] };
export function checkMonotonicReads(ops: readonly Op[], opts?: { exemptValues?: ReadonlySet<string> }): {
  violations: { node: string; key: string; earlier: { id: number; version: number }; later: { id: number; version: number } }[];
  exempted: number;
};
export function checkFilterLeaks(ops: readonly Op[], timeline: Record<string, readonly FilterSpan[]>): { node: string; key: string; id: number }[];
export function checkMountsServed(ops: readonly Op[], timeline: Record<string, readonly FilterSpan[]>): { node: string; key: string; id: number; start: number }[];
export function tally(ops: readonly Op[]): Record<string, number>;
export function checkHistory(
  ops: readonly Op[],
  finalData: Record<string, { value: string; version: number }>,
  opts?: { lossWindows?: readonly LossWindow[]; filterTimeline?: Record<string, readonly FilterSpan[]> },
): { acknowledged: number; lost: number; failoverLoss: number[]; lossPerWindow: number[]; readsTakenBackByFailover: number; violations: Record<string, unknown>[] };
export function recheck(summaryPath: string): ReturnType<typeof checkHistory> extends infer R ? Promise<R> : never;
