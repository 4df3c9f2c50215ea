/**
 * Domain <-> wire for every replication message. Indices are bigint in the domain and decimal
 * strings on the wire; millisecond times are numbers and uint64 strings; a missing value is
 * `undefined` in the domain and `missing: true` on the wire. Decoding checks what the proto cannot
 * (enums carried as strings, tree numbers, required sub-messages) and throws MalformedMessage.
 *
 *   const raw = encode.streamMessage({ type: 'heartbeat', lastWal: 7n, lastCommitTimeMs, sentAtMs });
 *   decode.streamMessage(raw); // deep-equal to what went in
 */
import { KINDS } from '../../core/replication/index.js';
import { ErrorCode, TesseraError } from '../../core/errors.js';
import type { WalEntry, WalOp } from '../../core/wal.js';
import type {
  ForwardReply,
  ForwardRequest,
  BootstrapInfo,
  BootstrapRequest,
  Guard,
  HeartbeatReply,
  HeartbeatRequest,
  KeyValue,
  LeafInfo,
  PingInfo,
  SnapshotInfo,
  StreamMessage,
  StreamOutcome,
} from '../../replication/index.js';
import type * as wire from './wire.js';

/** A message that decodes as protobuf but breaks the contract; or a domain value that cannot be sent. */
export class MalformedMessage extends TesseraError {
  constructor(message: string) {
    super(ErrorCode.invalidRequest, `malformed replication message: ${message}`);
  }
}

export type Tree = 1 | 2;

const U64_MAX = (1n << 64n) - 1n;
const DIGITS = /^\d{1,20}$/;
const OUTCOMES: readonly StreamOutcome[] = ['ok', 'not_retained', 'non_matching_guard'];

function u64(n: bigint, what: string): wire.U64 {
  if (n < 0n || n > U64_MAX) throw new MalformedMessage(`${what} ${n} is not a uint64`);
  return n.toString();
}

function big(s: wire.U64, what: string): bigint {
  if (!DIGITS.test(s)) throw new MalformedMessage(`${what} "${s}" is not a uint64`);
  return BigInt(s);
}

function msOut(n: number, what: string): wire.U64 {
  if (!Number.isSafeInteger(n) || n < 0) throw new MalformedMessage(`${what} ${n} is not a time in ms`);
  return String(n);
}

function msIn(s: wire.U64, what: string): number {
  const n = Number(big(s, what));
  if (!Number.isSafeInteger(n)) throw new MalformedMessage(`${what} ${s} is beyond a safe integer`);
  return n;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], what: string): T {
  if (!(allowed as readonly string[]).includes(value)) throw new MalformedMessage(`${what} "${value}" is unknown`);
  return value as T;
}

function tree(n: number): Tree {
  if (n !== 1 && n !== 2) throw new MalformedMessage(`tree ${n} is not 1 or 2`);
  return n;
}

function required<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new MalformedMessage(`${what} is missing`);
  return value;
}

const encodeGuard = (g: Guard, what = 'guard'): wire.Guard => ({ index: u64(g.index, `${what} index`), hash: g.hash });
const decodeGuard = (g: wire.Guard | null, what = 'guard'): Guard => {
  const raw = required(g, what);
  return { index: big(raw.index, `${what} index`), hash: raw.hash };
};

const encodeOp = (op: WalOp): wire.WalOp =>
  op.type === 'put' ? { delete: false, key: op.key, value: op.value } : { delete: true, key: op.key, value: Buffer.alloc(0) };
const decodeOp = (op: wire.WalOp): WalOp =>
  op.delete ? { type: 'del', key: op.key } : { type: 'put', key: op.key, value: op.value };

const encodeEntry = (e: WalEntry): wire.WalEntry => ({
  index: u64(e.index, 'entry index'),
  epoch: e.epoch,
  timeMs: msOut(e.time, 'entry time'),
  ops: e.ops.map(encodeOp),
  hash: e.hash,
});
const decodeEntry = (e: wire.WalEntry): WalEntry => ({
  index: big(e.index, 'entry index'),
  epoch: e.epoch,
  time: msIn(e.timeMs, 'entry time'),
  ops: e.ops.map(decodeOp),
  hash: e.hash,
});

const REPLY_KINDS: readonly ForwardReply['kind'][] = ['envelope', 'none', 'bare', 'error'];

/** A Merkle root on the wire: exactly 32 bytes (an empty field means none). */
function rootOut(root: Buffer): Buffer {
  if (root.length !== 32) throw new MalformedMessage(`verifyRoot: a Merkle root is 32 bytes, got ${root.length}`);
  return root;
}

function rootIn(raw: Buffer): Buffer {
  if (raw.length !== 32) throw new MalformedMessage(`verifyRoot: a Merkle root is 32 bytes, got ${raw.length}`);
  return Buffer.from(raw);
}

function jsonOut(value: Readonly<Record<string, unknown>>, what: string): Buffer {
  try {
    return Buffer.from(JSON.stringify(value), 'utf8');
  } catch {
    throw new MalformedMessage(`${what} is not serialisable as JSON`);
  }
}

function jsonIn(raw: Buffer, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = raw.length === 0 ? {} : JSON.parse(raw.toString('utf8'));
  } catch {
    throw new MalformedMessage(`${what} is not JSON`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new MalformedMessage(`${what} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * A primary's cluster addresses as received: left out when empty (an older primary, or one that
 * names none), so a reply reads the same with or without the field. Their validity and number
 * are the secondary's to judge (primary-addrs.ts).
 */
function addrsIn(addrs: readonly string[] | undefined): { clusterAddrs?: readonly string[] } {
  return addrs !== undefined && addrs.length > 0 ? { clusterAddrs: [...addrs] } : {};
}

/** Domain -> wire. */
export const encode = {
  bootstrapRequest: (r: BootstrapRequest): wire.BootstrapRequest => ({ ...r }),
  bootstrapInfo: (b: BootstrapInfo): wire.BootstrapResponse => ({
    clusterId: b.clusterId,
    version: b.version,
    primaryClusterAddr: b.primaryClusterAddr,
    primaryApiAddr: b.primaryApiAddr,
    lastWal: u64(b.lastWal, 'lastWal'),
    epoch: b.epoch,
    clusterAddrs: [...(b.clusterAddrs ?? [])],
  }),
  pingInfo: (p: PingInfo): wire.PingResponse => ({ ...p, clusterAddrs: [...(p.clusterAddrs ?? [])] }),
  streamRequest: (r: { secondaryId: string; guard: Guard; maxBatchEntries: number }): wire.StreamRequest => ({
    secondaryId: r.secondaryId,
    guard: encodeGuard(r.guard),
    maxBatchEntries: r.maxBatchEntries,
  }),
  streamMessage: (m: StreamMessage): wire.StreamMessage => {
    switch (m.type) {
      case 'start':
        return {
          start: { outcome: m.outcome, firstRetained: u64(m.firstRetained, 'firstRetained'), lastWal: u64(m.lastWal, 'lastWal') },
        };
      case 'batch':
        return {
          batch: {
            entries: m.entries.map(encodeEntry),
            primaryLastWal: u64(m.primaryLastWal, 'primaryLastWal'),
            primaryCommitTimeMs: msOut(m.primaryCommitTimeMs, 'primaryCommitTimeMs'),
          },
        };
      case 'heartbeat':
        return {
          heartbeat: {
            lastWal: u64(m.lastWal, 'lastWal'),
            lastCommitTimeMs: msOut(m.lastCommitTimeMs, 'lastCommitTimeMs'),
            sentAtMs: msOut(m.sentAtMs, 'sentAtMs'),
            draining: m.draining === true,
            ack: m.ack === true,
            verifyWal: u64(m.verify?.wal ?? 0n, 'verifyWal'),
            verifyRoot: m.verify ? rootOut(m.verify.root) : Buffer.alloc(0),
          },
        };
    }
  },
  heartbeatRequest: (h: HeartbeatRequest): wire.HeartbeatRequest => ({
    secondaryId: h.secondaryId,
    applied: encodeGuard(h.applied, 'applied'),
    sentAtMs: msOut(h.sentAtMs, 'sentAtMs'),
    state: h.state,
    apiAddr: h.apiAddr,
    clusterAddr: h.clusterAddr,
  }),
  heartbeatReply: (h: HeartbeatReply): wire.HeartbeatResponse => ({
    lastWal: u64(h.lastWal, 'lastWal'),
    lastCommitTimeMs: msOut(h.lastCommitTimeMs, 'lastCommitTimeMs'),
    receivedAtMs: msOut(h.receivedAtMs, 'receivedAtMs'),
    sentAtMs: msOut(h.sentAtMs, 'sentAtMs'),
    clusterAddrs: [...(h.clusterAddrs ?? [])],
  }),
  snapshotInfo: (s: SnapshotInfo): wire.SnapshotInfo => ({
    snapshotId: s.snapshotId,
    guard: encodeGuard(s.guard),
    root: s.root,
    subtreeRoots: [...s.subtreeRoots],
  }),
  leaves: (leaves: readonly LeafInfo[]): wire.LeafList => ({ leaves: leaves.map((l) => ({ ...l })) }),
  values: (values: readonly KeyValue[]): wire.ValueList => ({
    values: values.map((v) =>
      v.value === undefined ? { key: v.key, missing: true, value: Buffer.alloc(0) } : { key: v.key, missing: false, value: v.value },
    ),
  }),
  forwardRequest: (secondaryId: string, r: ForwardRequest): wire.ForwardRequest => ({
    secondaryId,
    requestId: r.requestId,
    method: r.method,
    operation: r.operation,
    namespace: r.namespace,
    path: r.path,
    trailingSlash: r.trailingSlash,
    query: { ...r.query },
    body: jsonOut(r.body, 'forwarded body'),
  }),
  forwardReply: (r: ForwardReply): wire.ForwardResponse => {
    if (!Number.isInteger(r.status) || r.status < 100 || r.status > 599) throw new MalformedMessage(`status ${r.status} is not an HTTP status`);
    return { kind: r.kind, status: r.status, body: jsonOut(r.body, 'forwarded reply'), commitIndex: u64(r.commitIndex, 'commitIndex') };
  },
};

/** Wire -> domain; throws MalformedMessage. */
export const decode = {
  bootstrapRequest: (r: wire.BootstrapRequest): BootstrapRequest => ({
    secondaryId: r.secondaryId,
    version: r.version,
    kind: oneOf(r.kind, KINDS, 'kind'),
    apiAddr: r.apiAddr,
    clusterAddr: r.clusterAddr,
  }),
  bootstrapInfo: (b: wire.BootstrapResponse): BootstrapInfo => ({
    clusterId: b.clusterId,
    version: b.version,
    primaryClusterAddr: b.primaryClusterAddr,
    primaryApiAddr: b.primaryApiAddr,
    lastWal: big(b.lastWal, 'lastWal'),
    epoch: b.epoch,
    ...addrsIn(b.clusterAddrs),
  }),
  pingInfo: (p: wire.PingResponse): PingInfo => ({
    clusterId: p.clusterId,
    nodeId: p.nodeId,
    version: p.version,
    mode: p.mode,
    apiAddr: p.apiAddr,
    clusterAddr: p.clusterAddr,
    ...addrsIn(p.clusterAddrs),
  }),
  streamRequest: (r: wire.StreamRequest): { secondaryId: string; guard: Guard; maxBatchEntries: number } => ({
    secondaryId: r.secondaryId,
    guard: decodeGuard(r.guard),
    maxBatchEntries: r.maxBatchEntries,
  }),
  streamMessage: (m: wire.StreamMessage): StreamMessage => {
    if ('start' in m && m.start) {
      const s = m.start;
      return {
        type: 'start',
        outcome: oneOf(s.outcome, OUTCOMES, 'outcome'),
        firstRetained: big(s.firstRetained, 'firstRetained'),
        lastWal: big(s.lastWal, 'lastWal'),
      };
    }
    if ('batch' in m && m.batch) {
      const b = m.batch;
      return {
        type: 'batch',
        entries: b.entries.map(decodeEntry),
        primaryLastWal: big(b.primaryLastWal, 'primaryLastWal'),
        primaryCommitTimeMs: msIn(b.primaryCommitTimeMs, 'primaryCommitTimeMs'),
      };
    }
    if ('heartbeat' in m && m.heartbeat) {
      const h = m.heartbeat;
      return {
        type: 'heartbeat',
        lastWal: big(h.lastWal, 'lastWal'),
        lastCommitTimeMs: msIn(h.lastCommitTimeMs, 'lastCommitTimeMs'),
        sentAtMs: msIn(h.sentAtMs, 'sentAtMs'),
        ...(h.draining ? { draining: true } : {}),
        ...(h.ack ? { ack: true } : {}),
        ...(h.verifyRoot.length > 0 ? { verify: { wal: big(h.verifyWal, 'verifyWal'), root: rootIn(h.verifyRoot) } } : {}),
      };
    }
    throw new MalformedMessage('stream message carries no body');
  },
  heartbeatRequest: (h: wire.HeartbeatRequest): HeartbeatRequest => ({
    secondaryId: h.secondaryId,
    applied: decodeGuard(h.applied, 'applied'),
    sentAtMs: msIn(h.sentAtMs, 'sentAtMs'),
    state: h.state,
    apiAddr: h.apiAddr,
    clusterAddr: h.clusterAddr,
  }),
  heartbeatReply: (h: wire.HeartbeatResponse): HeartbeatReply => ({
    lastWal: big(h.lastWal, 'lastWal'),
    lastCommitTimeMs: msIn(h.lastCommitTimeMs, 'lastCommitTimeMs'),
    receivedAtMs: msIn(h.receivedAtMs, 'receivedAtMs'),
    sentAtMs: msIn(h.sentAtMs, 'sentAtMs'),
    ...addrsIn(h.clusterAddrs),
  }),
  snapshotInfo: (s: wire.SnapshotInfo): SnapshotInfo => ({
    snapshotId: s.snapshotId,
    guard: decodeGuard(s.guard),
    root: s.root,
    subtreeRoots: s.subtreeRoots,
  }),
  tree,
  leaves: (l: wire.LeafList): LeafInfo[] => l.leaves.map((x) => ({ key: x.key, valueHash: x.valueHash, subpage: x.subpage })),
  values: (v: wire.ValueList): KeyValue[] => v.values.map((x) => ({ key: x.key, value: x.missing ? undefined : x.value })),
  forwardRequest: (r: wire.ForwardRequest): ForwardRequest => ({
    requestId: r.requestId,
    method: r.method,
    operation: r.operation,
    namespace: r.namespace,
    path: r.path,
    trailingSlash: r.trailingSlash,
    query: { ...r.query },
    body: jsonIn(r.body, 'forwarded body'),
  }),
  forwardReply: (r: wire.ForwardResponse): ForwardReply => {
    if (r.status < 100 || r.status > 599) throw new MalformedMessage(`status ${r.status} is not an HTTP status`);
    return { kind: oneOf(r.kind, REPLY_KINDS, 'reply kind'), status: r.status, body: jsonIn(r.body, 'forwarded reply'), commitIndex: big(r.commitIndex, 'commitIndex') };
  },
};
