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
}
export type FaultType = 'kill' | 'pause' | 'partition' | 'partition-primary' | 'wal-behind';
export interface Fault { type: FaultType; target: string; holdMs: number }
export const FAULTS: readonly FaultType[];
export function prng(seed: number): { next(): number; int(lo: number, hi: number): number; pick<T>(xs: readonly T[]): T };
export function faultSchedule(seed: number, cycles: number, cycleMs: number): Fault[];
export interface Lost { key: string; expected?: string; expected_version?: number | null; found: { value: string; version: number } | null; missing?: number; reason?: string }
export function checkAcknowledged(
  ops: readonly Op[],
  finalData: Record<string, { value: string; version: number }>,
  opts?: { oldPrimaries?: readonly { node: string; replacedAt: number }[] },
): { acknowledged: number; lost: Lost[]; lostWrites: number; failoverLoss: number[] };
export function checkMonotonicReads(ops: readonly Op[]): { node: string; key: string; earlier: { id: number; version: number }; later: { id: number; version: number } }[];
export function checkFilterLeaks(ops: readonly Op[], allowedMounts: Record<string, readonly string[]>): { node: string; key: string; id: number }[];
export function tally(ops: readonly Op[]): Record<string, number>;
