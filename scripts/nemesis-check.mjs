/**
 * The nemesis checker: pure functions over a recorded history (scripts/nemesis.mjs) and the data
 * read from the nodes after the final heal. No I/O here, so a saved history (JSON lines) can be
 * checked again: `checkHistory(ops, finalPrimaryData)`.
 *
 * An operation: { id, client, kind: 'write'|'read', node, mount, key, value, start, end,
 * outcome: 'ok'|'error'|'unknown', status, version }. `error` means the write was certainly not
 * applied (refused: 4xx, connection refused); `unknown` means it may have been (timeout, reset,
 * 5xx): the checker accepts its value as the final one but never requires it.
 */

/** mulberry32: a small seeded PRNG; the same seed gives the same fault schedule. */
export function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), pick: (xs) => xs[Math.floor(next() * xs.length)] };
}

export const FAULTS = ['kill', 'pause', 'partition', 'partition-primary', 'wal-behind'];

/**
 * The fault of every cycle, from the seed alone (same seed, same schedule): { type, target,
 * holdMs }. Nodes: a is the primary; b the DR secondary; c, d the performance secondaries. Only a
 * pause or a partition from all touches the primary (SIGKILL of the primary belongs with a failover).
 */
export function faultSchedule(seed, cycles, cycleMs) {
  const rng = prng(seed);
  return Array.from({ length: cycles }, () => {
    const type = rng.pick(FAULTS);
    const target = type === 'pause' ? rng.pick(['a', 'b', 'c', 'd']) : type === 'partition-primary' ? 'a' : rng.pick(['b', 'c', 'd']);
    return { type, target, holdMs: rng.int(Math.floor(cycleMs / 4), Math.floor(cycleMs / 2)) };
  });
}

const keyOf = (op) => `${op.mount}/${op.key}`;

/**
 * Every acknowledged write present with its latest acknowledged value on the final primary.
 * `finalData`: { 'mount/key': { value, version } }. Writes to one key come from one client, in
 * sequence, so "latest" is well defined; a later write of unknown outcome may legitimately win.
 * `oldPrimaries`: [{ node, replacedAt }]: writes a replaced primary acknowledged after `replacedAt`
 * (ms) are failover loss, reported apart and never required.
 */
export function checkAcknowledged(ops, finalData, { oldPrimaries = [] } = {}) {
  const byKey = new Map();
  for (const op of ops) {
    if (op.kind !== 'write') continue;
    const k = keyOf(op);
    if (!byKey.has(k)) byKey.set(k, []);
    byKey.get(k).push(op);
  }
  const lost = [];
  const failoverLoss = [];
  let acknowledged = 0;
  for (const [k, writes] of byKey) {
    writes.sort((x, y) => x.start - y.start);
    const isFailoverLoss = (w) => oldPrimaries.some((o) => w.node === o.node && w.end > o.replacedAt);
    const acked = writes.filter((w) => w.outcome === 'ok');
    acknowledged += acked.length;
    const counted = acked.filter((w) => !isFailoverLoss(w));
    const last = counted.at(-1);
    const got = finalData[k];
    const later = writes.filter((w) => w.outcome !== 'error' && (!last || w.start >= last.start)).map((w) => w.value);
    if (last && !later.includes(got?.value)) {
      // Which acknowledged writes went missing: those after the value found (all when none found).
      const at = acked.findIndex((w) => w.value === got?.value);
      const missing = acked.slice(at + 1).filter((w) => !isFailoverLoss(w));
      lost.push({ key: k, expected: last.value, expected_version: last.version ?? null, found: got ?? null, missing: missing.length });
    }
    if (last && got && typeof last.version === 'number' && typeof got.version === 'number' && got.version < last.version) {
      lost.push({ key: k, expected_version: last.version, found: got, reason: 'version went backwards' });
    }
    failoverLoss.push(...acked.filter(isFailoverLoss).filter((w) => w.value !== got?.value).map((w) => w.id));
  }
  return { acknowledged, lost, lostWrites: lost.reduce((n, l) => n + (l.missing ?? 1), 0), failoverLoss };
}

/** Reads on one node never go backwards: for two ok reads of a key, one ended before the other began. */
export function checkMonotonicReads(ops) {
  const violations = [];
  const seen = new Map();
  const reads = ops.filter((op) => op.kind === 'read' && op.outcome === 'ok' && typeof op.version === 'number').sort((x, y) => x.start - y.start);
  for (const r of reads) {
    const k = `${r.node}|${keyOf(r)}`;
    const prev = seen.get(k) ?? [];
    for (const p of prev) {
      if (p.end < r.start && r.version < p.version) violations.push({ node: r.node, key: keyOf(r), earlier: { id: p.id, version: p.version }, later: { id: r.id, version: r.version } });
    }
    // Only the highest completed read matters for the next ones.
    const best = prev.reduce((b, p) => (p.version > (b?.version ?? -1) ? p : b), undefined);
    seen.set(k, best && best.version > r.version ? [best, r] : [r]);
  }
  return violations;
}

/** No performance secondary serves a key of a mount outside its filter. */
export function checkFilterLeaks(ops, allowedMounts) {
  return ops
    .filter((op) => op.kind === 'read' && allowedMounts[op.node] !== undefined && !allowedMounts[op.node].includes(op.mount) && op.status === 200)
    .map((op) => ({ node: op.node, key: keyOf(op), id: op.id }));
}

/** Counts of the history for the summary. */
export function tally(ops) {
  const t = { operations: ops.length, writes: 0, reads: 0, ok: 0, error: 0, unknown: 0, forwarded_writes_ok: 0 };
  for (const op of ops) {
    t[op.kind === 'write' ? 'writes' : 'reads']++;
    t[op.outcome]++;
    if (op.kind === 'write' && op.forwarded && op.outcome === 'ok') t.forwarded_writes_ok++;
  }
  return t;
}
