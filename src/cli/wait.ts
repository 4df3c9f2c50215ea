/**
 * Waiting for a node to reach a replication role: polls `sys/replication/{kind}/status`
 * (unauthenticated) until the goal holds, showing state and lag meanwhile (progress.ts), or
 * throws `WaitTimedOut` at the deadline naming where the node was. A poll that fails (the node
 * restarting, a connection refused) is retried until the deadline: only the deadline ends a wait.
 *
 *   await waitForRole(client, 'dr', { goal: 'stream-wals' }, { timeoutMs: 60_000, intervalMs: 500, display, label: 'dr' });
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { KindStatus, ReplicationKind, TesseraClient } from '../api/index.js';
import { describe } from './context.js';
import { clusterHostPort } from '../core/cluster-addr.js';
import { parseDuration } from '../core/duration.js';
import { UsageError, WaitTimedOut } from './errors.js';
import { describePosition, positionOf, type StatusDisplay } from './progress.js';

export const Goal = { streaming: 'stream-wals', running: 'running' } as const;
export type Goal = (typeof Goal)[keyof typeof Goal];

export interface Target {
  /** `stream-wals`: a secondary streaming; `running`: a primary. */
  readonly goal: Goal;
  /** With `stream-wals`: the secondary must follow one of these cluster addresses. */
  readonly primaryClusterAddrs?: readonly string[];
}

export interface WaitOptions {
  readonly timeoutMs: number;
  readonly intervalMs: number;
  readonly display: StatusDisplay;
  readonly label: string;
}

/** Whether a status block is at the target. */
export function reached(st: KindStatus, t: Target): boolean {
  const r = st as Record<string, unknown>;
  if (t.goal === Goal.running) return st.mode === 'primary' && r['state'] === 'running';
  if (st.mode !== 'secondary' || r['state'] !== 'stream-wals') return false;
  const addrs = t.primaryClusterAddrs;
  if (addrs === undefined || addrs.length === 0) return true;
  // Either form (`https://host:port`, `host:port`) names the same primary.
  const at = clusterHostPort(String(r['primary_cluster_addr'] ?? ''));
  return at !== undefined && addrs.some((a) => clusterHostPort(a) === at);
}

export async function waitForRole(client: TesseraClient, kind: ReplicationKind, target: Target, o: WaitOptions): Promise<KindStatus> {
  const deadline = Date.now() + o.timeoutMs;
  let last: KindStatus | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      last = await client.replication.kindStatus(kind);
      lastError = undefined;
      o.display.show(o.label, last);
      if (reached(last, target)) return last;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) break;
    await delay(Math.min(o.intervalMs, Math.max(0, deadline - Date.now())));
  }
  const where = lastError !== undefined ? `the last poll failed: ${describe(lastError)}` : last !== undefined ? `last seen: ${describePosition(positionOf(last))}` : 'no status was read';
  const goal = target.goal === Goal.running ? `${kind} primary running` : `${kind} secondary in stream-wals${target.primaryClusterAddrs?.length ? ` from ${target.primaryClusterAddrs.join(', ')}` : ''}`;
  throw new WaitTimedOut(`${o.label} did not reach ${goal} within ${Math.round(o.timeoutMs / 1000)} s (${where})`);
}

const WAITABLE = /^\/*(?:v1\/)?sys\/replication\/(dr|performance)\/secondary\/(enable|update-primary|promote)\/*$/;

/**
 * What `write -wait` waits for after a write to `path`: a promoted node running as primary, an
 * enabled or re-pointed secondary streaming (from one of `update_primary_addrs` when given).
 * Undefined for any other path.
 */
export function waitTargetFor(path: string, body: Readonly<Record<string, unknown>>): { kind: ReplicationKind; target: Target } | undefined {
  const m = WAITABLE.exec(path);
  if (m === null) return undefined;
  const kind = m[1] as ReplicationKind;
  if (m[2] === 'promote') return { kind, target: { goal: Goal.running } };
  const addrs = body['update_primary_addrs'];
  const list = Array.isArray(addrs) ? addrs.map(String) : typeof addrs === 'string' ? addrs.split(',').map((a) => a.trim()).filter((a) => a !== '') : [];
  return { kind, target: { goal: Goal.streaming, ...(list.length > 0 ? { primaryClusterAddrs: list } : {}) } };
}

/** A `-...-timeout` flag in milliseconds ("90s", "5m", or seconds); a bad value is a usage error. */
export function timeoutMs(flag: string, value: string): number {
  let seconds: number;
  try {
    seconds = parseDuration(value, flag);
  } catch (e) {
    throw new UsageError(describe(e));
  }
  if (seconds <= 0) throw new UsageError(`${flag}: must be a positive duration`);
  return seconds * 1000;
}
