/**
 * The nemesis checker: pure functions over a recorded history (scripts/nemesis.mjs) and the data
 * read from the nodes after the final heal. No I/O here but `recheck`, so a saved history can be
 * checked again.
 *
 * An operation: { id, client, kind: 'write'|'read', node, mount, key, value, start, end,
 * outcome: 'ok'|'error'|'unknown', status, version, served }. `error` means the write was certainly
 * not applied (refused: 4xx, connection refused); `unknown` means it may have been (timeout,
 * reset, 5xx): the checker accepts its value as the final one but never requires it.
 *
 * Judging a saved run again (after changing the checker, say):
 *   node scripts/nemesis-check.mjs bench-results/nemesis-7.summary.json
 *
 * A failover gives a loss window: { from, until: { node: ms } }. A write sent to one of those
 * nodes (the old primary, or a performance secondary forwarding to it) that was acknowledged at or
 * after `from` and started before that node's `until` may be lost with the old primary: it is
 * counted as the failover's data loss (its RPO), never as a violation. `from` is the last moment
 * the harness saw the DR secondary caught up: it read the primary's last index then and waited
 * until the secondary had applied it, so every write acknowledged before `from` must survive.
 */
import { readFile } from 'node:fs/promises';

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
export type FaultType = 'kill' | 'pause' | 'partition' | 'partition-primary' | 'wal-behind' | 'failover' | 'filter' | HaFaultType;
/** The faults of the HA topology (`--topology ha`): see `faultSchedule`. */
export type HaFaultType = 'active-kill' | 'active-pause' | 'active-stall' | 'duplicate-start' | 'step-down' | 'pg-restart';
export interface Fault {
  type: FaultType;
  target: string;
  holdMs: number;
  variant?: 'kill' | 'partition' | 'planned' | 'allow' | 'deny';
}
export interface LossWindow {
  from: number;
  until: Record<string, number>;
}
export interface FilterSpan {
  mounts: string[];
  from: number;
  to?: number;
}
export type FinalData = Record<string, { value: string; version: number } | undefined>;
export type FilterTimeline = Record<string, readonly FilterSpan[]>;
export interface Lost {
  key: string;
  id: number;
  value?: string | undefined;
  version: number | null;
  node: string;
  found: { value: string; version: number } | null;
  reason: string;
}
export interface Prng {
  next(): number;
  int(lo: number, hi: number): number;
  pick<T>(xs: readonly T[]): T;
}

/** mulberry32: a small seeded PRNG; the same seed gives the same fault schedule. */
export function prng(seed: number): Prng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)] as T };
}

export const FAULTS: readonly FaultType[] = ['kill', 'pause', 'partition', 'partition-primary', 'wal-behind', 'failover', 'filter'];
/** The HA topology's faults: each targets a cluster (`primary`, `dr`), acting on its active node or its PostgreSQL. */
export const HA_FAULTS: readonly HaFaultType[] = ['active-kill', 'active-pause', 'active-stall', 'duplicate-start', 'step-down', 'pg-restart'];
/** How long `active-pause` holds a node stopped: past the HA topology's 2 s lease, so another node takes over. */
export const PAUSE_PAST_LEASE_MS: readonly [number, number] = [3_000, 5_000];
/** How long `active-stall` blocks a node's event loop: under the 2 s lease, so nothing may change. */
export const STALL_UNDER_LEASE_MS: readonly [number, number] = [1_000, 1_400];

/**
 * The fault of every cycle, from the seed alone (same seed, same schedule): { type, target,
 * holdMs, variant? }. Targets are roles, resolved when the fault runs (a failover swaps them):
 * `primary`, `dr` (the DR secondary), `c` and `d` (the performance secondaries).
 * - kill: SIGKILL of the target, restart, unseal.  pause: SIGSTOP, SIGCONT.
 * - partition: every link of one secondary cut.  partition-primary: the primary cut from all.
 * - wal-behind: a secondary cut until the primary has written past its WAL bound; it must reconcile.
 * - failover: the primary fails (variant `kill`, or `partition`: it stays up and keeps taking
 *   writes from clients that have not moved), the DR secondary is promoted, the performance
 *   secondaries follow, the old primary comes back, is demoted and rejoins as the DR secondary.
 *   Variant `planned`: a switchover under writes, the primary demoted first (it drains to the
 *   DR secondary), then the secondary promoted without force; it may lose nothing acknowledged.
 *   The next failover is the failback.
 * - filter: a performance secondary is killed, its paths filter changed on the primary, restarted;
 *   variant `allow` (the mounts it keeps) or `deny` (the other one, when it keeps only its own).
 * The HA topology's faults (HA_FAULTS), whose targets are clusters (`primary`: three nodes on one
 * PostgreSQL, `dr`: the DR secondary cluster, two nodes on another):
 * - active-kill: SIGKILL of the cluster's active node, restart, unseal; a standby takes over.
 * - active-pause: SIGSTOP of the active node for 3-5 s (past its 2 s lease), SIGCONT.
 * - active-stall: the active node's event loop blocked for 1-1.4 s (under its lease; its worker
 *   threads go on): the same node must still be active afterwards, with no takeover.
 * - duplicate-start: a second process with the active node's config must refuse to start; the
 *   same node stays active.
 * - step-down: PUT sys/step-down on the primary cluster's active node (a DR secondary does not
 *   serve sys/step-down: it is not on the short list of paths a DR secondary answers).
 * - pg-restart: the cluster's PostgreSQL stopped for a while and started again.
 * `types` narrows the draw to some of FAULTS (`--faults`); the schedule depends on it too.
 */
export function faultSchedule(seed: number, cycles: number, cycleMs: number, types: readonly FaultType[] = FAULTS): Fault[] {
  const rng = prng(seed);
  const targets: Record<FaultType, readonly string[]> = {
    kill: ['primary', 'dr', 'c', 'd'], pause: ['primary', 'dr', 'c', 'd'], partition: ['dr', 'c', 'd'], 'partition-primary': ['primary'],
    'wal-behind': ['dr', 'c', 'd'], failover: ['primary'], filter: ['c', 'd'],
    'active-kill': ['primary', 'dr'], 'active-pause': ['primary', 'dr'], 'active-stall': ['primary', 'dr'], 'duplicate-start': ['primary', 'dr'], 'step-down': ['primary'], 'pg-restart': ['primary', 'dr'],
  };
  // How a filter change is written, and whether a failover is a planned switchover, come from
  // PRNGs of their own, so adding them left every seed's schedule of fault types as it was.
  const form = prng(seed ^ 0x2f1c3a5b);
  const plan = prng(seed ^ 0x6a09e667);
  return Array.from({ length: cycles }, (): Fault => {
    const type = rng.pick(types);
    const target = rng.pick(targets[type]);
    const [lo, hi] = type === 'active-pause' ? PAUSE_PAST_LEASE_MS : type === 'active-stall' ? STALL_UNDER_LEASE_MS : [Math.floor(cycleMs / 4), Math.floor(cycleMs / 2)];
    const fault: Fault = { type, target, holdMs: rng.int(lo, hi) };
    if (type === 'failover') {
      const variant = rng.pick(['kill', 'partition'] as const);
      return { ...fault, variant: plan.next() < 1 / 3 ? 'planned' : variant };
    }
    return type === 'filter' ? { ...fault, variant: form.pick(['allow', 'deny'] as const) } : fault;
  });
}

const keyOf = (op: Op): string => `${op.mount}/${op.key}`;

/** Whether `op` falls in a failover's loss window (see the header). */
export const inLossWindow = (op: Op, windows: readonly LossWindow[]): boolean =>
  windows.some((w) => w.until[op.node] !== undefined && op.end >= w.from && op.start <= w.until[op.node]!);

/**
 * Every acknowledged write present with its latest acknowledged value on the final primary, and
 * none silently lost on the way. `finalData`: { 'mount/key': { value, version } }. Writes to one
 * key come from one client, in sequence, so "latest" is well defined; a later write of unknown
 * outcome may legitimately win.
 *
 * KV v2 versions make a loss visible even when the key was overwritten since: a write that was
 * acknowledged with version v and kept makes every write that starts after it ends get a higher
 * version. A later acknowledged write with a version <= v means the earlier one was lost.
 *
 * A write in a failover's loss window that was lost is the failover's loss (`failoverLoss`, ids;
 * `lossPerWindow`, the RPO in writes); any other lost write is a violation (`lost`).
 */
export function checkAcknowledged(
  ops: readonly Op[],
  finalData: FinalData,
  { lossWindows = [] }: { lossWindows?: readonly LossWindow[] } = {},
): { acknowledged: number; lost: Lost[]; lostWrites: number; failoverLoss: number[]; lossPerWindow: number[] } {
  const byKey = new Map<string, Op[]>();
  for (const op of ops) {
    if (op.kind !== 'write') continue;
    const k = keyOf(op);
    if (!byKey.has(k)) byKey.set(k, []);
    byKey.get(k)!.push(op);
  }
  const lost: Lost[] = [];
  const failoverLoss: number[] = [];
  const lossPerWindow = lossWindows.map(() => 0);
  let acknowledged = 0;
  for (const [k, writes] of byKey) {
    writes.sort((x, y) => x.start - y.start);
    const acked = writes.filter((w) => w.outcome === 'ok');
    acknowledged += acked.length;
    const got = finalData[k];
    const finalAt = writes.findIndex((w) => w.value === got?.value);
    // Suffix minimum of acknowledged versions, by start: the lowest version a later write got.
    const versioned = acked.filter((w): w is Op & { version: number } => typeof w.version === 'number');
    const suffixMin: number[] = new Array<number>(versioned.length + 1).fill(Infinity);
    for (let i = versioned.length - 1; i >= 0; i--) suffixMin[i] = Math.min(versioned[i]!.version, suffixMin[i + 1]!);
    const firstStartingAfter = (t: number): number => {
      let lo = 0;
      let hi = versioned.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (versioned[mid]!.start > t) hi = mid;
        else lo = mid + 1;
      }
      return lo;
    };
    const indexOf = new Map(writes.map((w, i) => [w, i]));
    for (const w of acked) {
      const shadowed = typeof w.version === 'number' && suffixMin[firstStartingAfter(w.end)]! <= w.version;
      // Gone from the final state: neither it nor any write after it is what the primary holds.
      const gone = finalAt < indexOf.get(w)!;
      if (!shadowed && !gone) continue;
      if (inLossWindow(w, lossWindows)) {
        failoverLoss.push(w.id);
        lossWindows.forEach((win, i) => {
          if (inLossWindow(w, [win])) lossPerWindow[i]!++;
        });
      } else {
        lost.push({ key: k, id: w.id, value: w.value, version: w.version ?? null, node: w.node, found: got ?? null, reason: shadowed ? 'a later write got a version not above it' : 'not on the final primary' });
      }
    }
  }
  return { acknowledged, lost, lostWrites: lost.length, failoverLoss, lossPerWindow };
}

export interface ReadBackwards {
  node: string;
  key: string;
  earlier: { id: number; version: number };
  later: { id: number; version: number };
}

/**
 * Reads on one node never go backwards: for two ok reads of a key on one node, the later one
 * (started after the earlier ended) returns a version at least as high. A higher version that was
 * a failover-window write (`exemptValues`) may be taken back by the failover: such a step back is
 * counted, not a violation.
 */
export function checkMonotonicReads(ops: readonly Op[], { exemptValues = new Set<string | undefined>() }: { exemptValues?: ReadonlySet<string | undefined> } = {}): {
  violations: ReadBackwards[];
  exempted: number;
} {
  type VersionedOp = Op & { version: number };
  const violations: ReadBackwards[] = [];
  let exempted = 0;
  const best = new Map<string, VersionedOp>();
  const reads = ops.filter((op): op is VersionedOp => op.kind === 'read' && op.outcome === 'ok' && typeof op.version === 'number').sort((x, y) => x.start - y.start);
  const done: VersionedOp[] = [];
  for (const r of reads) {
    // Reads that ended before this one started become visible to it, in end order.
    done.sort((x, y) => x.end - y.end);
    while (done.length > 0 && done[0]!.end < r.start) {
      const p = done.shift()!;
      const k = `${p.node}|${keyOf(p)}`;
      const b = best.get(k);
      if (!b || p.version > b.version) best.set(k, p);
    }
    const b = best.get(`${r.node}|${keyOf(r)}`);
    if (b && r.version < b.version) {
      if (exemptValues.has(b.value)) {
        exempted++;
        best.delete(`${r.node}|${keyOf(r)}`); // the failover took it back: start over from here
      } else {
        violations.push({ node: r.node, key: keyOf(r), earlier: { id: b.id, version: b.version }, later: { id: r.id, version: r.version } });
      }
    }
    done.push(r);
  }
  return { violations, exempted };
}

export interface StaleRead {
  node: string;
  key: string;
  read: { id: number; version: number; start: number };
  acknowledged: { id: number; version: number; end: number };
}

/**
 * Reads on the nodes of one cluster that share their storage (an HA cluster: the active node and
 * performance standbys answering reads themselves) are current: an ok read returns a version at
 * least that of every ok write of its key acknowledged (by any node) before the read started. A
 * failover-window write (`exemptValues`) may be taken back and is never required.
 */
export function checkCurrentReads(ops: readonly Op[], nodes: readonly string[], { exemptValues = new Set<string | undefined>() }: { exemptValues?: ReadonlySet<string | undefined> } = {}): StaleRead[] {
  const stale: StaleRead[] = [];
  const on = new Set(nodes);
  /** Per key, the acknowledged writes in the order they ended. */
  const writes = new Map<string, Array<Op & { version: number }>>();
  for (const op of ops) {
    if (op.kind !== 'write' || op.outcome !== 'ok' || typeof op.version !== 'number' || exemptValues.has(op.value)) continue;
    const list = writes.get(keyOf(op)) ?? [];
    list.push(op as Op & { version: number });
    writes.set(keyOf(op), list);
  }
  for (const list of writes.values()) list.sort((x, y) => x.end - y.end);
  for (const r of ops) {
    // A read with no version said the mount is not served here (checkMountsServed judges it).
    if (r.kind !== 'read' || r.outcome !== 'ok' || !on.has(r.node) || typeof r.version !== 'number') continue;
    const version = r.version;
    // The highest version acknowledged before the read began.
    let need: (Op & { version: number }) | undefined;
    for (const w of writes.get(keyOf(r)) ?? []) {
      if (w.end >= r.start) break;
      if (need === undefined || w.version > need.version) need = w;
    }
    if (need !== undefined && version < need.version) {
      stale.push({ node: r.node, key: keyOf(r), read: { id: r.id, version, start: r.start }, acknowledged: { id: need.id, version: need.version, end: need.end } });
    }
  }
  return stale;
}

/**
 * No performance secondary serves a key of a mount outside its filter. `timeline[node]`: the
 * filters it had, [{ mounts, from, to }] (ms; `to` undefined for the one in force). A filter
 * change takes effect when the secondary has reconnected and reconciled, so the old and new
 * filters overlap in between; a read is a leak only when no filter in force during it allows the
 * mount.
 */
export function checkFilterLeaks(ops: readonly Op[], timeline: FilterTimeline): { node: string; key: string; id: number }[] {
  return ops
    .filter((op) => op.kind === 'read' && timeline[op.node] !== undefined && op.status === 200)
    .filter((op) => !timeline[op.node]!.some((f) => f.from <= op.end && (f.to === undefined || f.to >= op.start) && f.mounts.includes(op.mount)))
    .map((op) => ({ node: op.node, key: keyOf(op), id: op.id }));
}

/**
 * A node serves every mount it holds: a read answered 404 with errors ("no such mount", as opposed
 * to `{"errors":[]}`, no such key) of a mount that the node must serve is a violation. The
 * primary serves both; a performance secondary the mounts of every filter in force during the read
 * (old and new overlap after a change). Catches a node that answers before its mount table is
 * loaded (issue 17 item 5: 404 for ~120 ms after unseal).
 */
export function checkMountsServed(ops: readonly Op[], timeline: FilterTimeline): { node: string; key: string; id: number; start: number }[] {
  return ops
    .filter((op) => op.kind === 'read' && op.mountMissing === true)
    .filter((op) => timeline[op.node] === undefined || timeline[op.node]!.filter((f) => f.from <= op.end && (f.to === undefined || f.to >= op.start)).every((f) => f.mounts.includes(op.mount)))
    .map((op) => ({ node: op.node, key: keyOf(op), id: op.id, start: op.start }));
}

export interface Tally {
  operations: number;
  writes: number;
  reads: number;
  ok: number;
  error: number;
  unknown: number;
  forwarded_writes_ok: number;
}

/** Counts of the history for the summary. */
export function tally(ops: readonly Op[]): Tally {
  const t: Tally = { operations: ops.length, writes: 0, reads: 0, ok: 0, error: 0, unknown: 0, forwarded_writes_ok: 0 };
  for (const op of ops) {
    t[op.kind === 'write' ? 'writes' : 'reads']++;
    t[op.outcome]++;
    if (op.kind === 'write' && op.forwarded && op.outcome === 'ok') t.forwarded_writes_ok++;
  }
  return t;
}

export interface Verdict {
  acknowledged: number;
  lost: number;
  failoverLoss: number[];
  lossPerWindow: number[];
  readsTakenBackByFailover: number;
  violations: Record<string, unknown>[];
}

/**
 * The whole verdict over a history: `finalData` read from the final primary, `lossWindows` and
 * `filterTimeline` as recorded by the harness. Used by the harness and to re-check a saved run.
 */
export function checkHistory(
  ops: readonly Op[],
  finalData: FinalData,
  { lossWindows = [], filterTimeline = {}, currentReaders = [] }: { lossWindows?: readonly LossWindow[]; filterTimeline?: FilterTimeline; currentReaders?: readonly string[] } = {},
): Verdict {
  const acked = checkAcknowledged(ops, finalData, { lossWindows });
  const exemptValues = new Set(ops.filter((op) => op.kind === 'write' && inLossWindow(op, lossWindows)).map((op) => op.value));
  const monotonic = checkMonotonicReads(ops, { exemptValues });
  const leaks = checkFilterLeaks(ops, filterTimeline);
  const unserved = checkMountsServed(ops, filterTimeline);
  const stale = checkCurrentReads(ops, currentReaders, { exemptValues });
  return {
    acknowledged: acked.acknowledged,
    lost: acked.lostWrites,
    failoverLoss: acked.failoverLoss,
    lossPerWindow: acked.lossPerWindow,
    readsTakenBackByFailover: monotonic.exempted,
    violations: [
      ...acked.lost.map((l) => ({ type: 'lost-acknowledged-write', ...l })),
      ...monotonic.violations.map((v) => ({ type: 'read-went-backwards', ...v })),
      ...leaks.map((v) => ({ type: 'filter-leak', ...v })),
      ...unserved.map((v) => ({ type: 'mount-not-served', ...v })),
      ...stale.map((v) => ({ type: 'stale-read', ...v })),
    ],
  };
}

/** The saved run of `summaryPath` (its history next to it) judged again; resolves the verdict. */
export async function recheck(summaryPath: string): Promise<Verdict> {
  const summary = JSON.parse(await readFile(summaryPath, 'utf8')) as {
    history: string;
    loss_windows?: { from: number; until: Record<string, number | null> }[];
    final_data?: FinalData;
    filters?: FilterTimeline;
  };
  const ops = (await readFile(summary.history, 'utf8')).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Op);
  // JSON has no Infinity: a window still open when the run ended was saved as null.
  const lossWindows = (summary.loss_windows ?? []).map((w) => ({ from: w.from, until: Object.fromEntries(Object.entries(w.until).map(([n, t]) => [n, t ?? Infinity])) }));
  return checkHistory(ops, summary.final_data ?? {}, { lossWindows, filterTimeline: summary.filters ?? {} });
}
