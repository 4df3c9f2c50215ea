/** Domain -> wire -> protobuf bytes -> wire -> domain, through the real serializers of the .proto. */
import fc from 'fast-check';
import type { WalEntry, WalOp } from '../../core/wal.js';
import type { StreamMessage } from '../../replication/transport.js';
import { MalformedMessage, decode, encode } from './codec.js';
import { loadReplication } from './proto.js';
import type * as wire from './wire.js';

const { definition } = loadReplication();
const U64_MAX = 2n ** 64n - 1n;

function viaBytes<T>(method: string, side: 'request' | 'response', value: T): T {
  const m = definition[method];
  if (!m) throw new Error(`no method ${method}`);
  const bytes = side === 'request' ? m.requestSerialize(value) : m.responseSerialize(value);
  return (side === 'request' ? m.requestDeserialize(bytes) : m.responseDeserialize(bytes)) as T;
}

const u64 = fc.bigInt({ min: 0n, max: U64_MAX });
const ms = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const bytes = fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a));
const op: fc.Arbitrary<WalOp> = fc.oneof(
  fc.record({ type: fc.constant('put' as const), key: fc.string(), value: bytes }),
  fc.record({ type: fc.constant('del' as const), key: fc.string() }),
);
const entry: fc.Arbitrary<WalEntry> = fc.record({
  index: u64,
  epoch: fc.integer({ min: 0, max: 0xffffffff }),
  time: ms,
  ops: fc.array(op, { maxLength: 4 }),
  hash: bytes,
});
const message: fc.Arbitrary<StreamMessage> = fc.oneof(
  fc.record({
    type: fc.constant('start' as const),
    outcome: fc.constantFrom('ok' as const, 'not_retained' as const, 'non_matching_guard' as const),
    firstRetained: u64,
    lastWal: u64,
  }),
  fc.record({ type: fc.constant('batch' as const), entries: fc.array(entry, { maxLength: 4 }), primaryLastWal: u64, primaryCommitTimeMs: ms }),
  fc.record({ type: fc.constant('heartbeat' as const), lastWal: u64, lastCommitTimeMs: ms, sentAtMs: ms }),
  fc.record({
    type: fc.constant('heartbeat' as const), lastWal: u64, lastCommitTimeMs: ms, sentAtMs: ms,
    verify: fc.record({ wal: u64, root: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((a) => Buffer.from(a)) }),
  }),
);

describe('codec round trips through protobuf bytes', () => {
  it('stream messages, any shape', () => {
    fc.assert(
      fc.property(message, (m) => {
        expect(decode.streamMessage(viaBytes('StreamWal', 'response', encode.streamMessage(m)))).toEqual(m);
      }),
      { numRuns: 300 },
    );
  });

  it('the edges of uint64 and an empty batch', () => {
    for (const lastWal of [0n, 1n, 2n ** 53n + 1n, 2n ** 63n, U64_MAX]) {
      const m: StreamMessage = { type: 'start', outcome: 'ok', firstRetained: lastWal, lastWal };
      expect(decode.streamMessage(viaBytes('StreamWal', 'response', encode.streamMessage(m)))).toEqual(m);
    }
    const empty: StreamMessage = { type: 'batch', entries: [], primaryLastWal: 0n, primaryCommitTimeMs: 0 };
    expect(decode.streamMessage(viaBytes('StreamWal', 'response', encode.streamMessage(empty)))).toEqual(empty);
  });

  it('requests and replies of the unary calls', () => {
    fc.assert(
      fc.property(u64, bytes, ms, fc.string(), (index, hash, t, s) => {
        const guard = { index, hash };
        const stream = { secondaryId: s, guard, maxBatchEntries: 7 };
        expect(decode.streamRequest(viaBytes('StreamWal', 'request', encode.streamRequest(stream)))).toEqual(stream);
        const hb = { secondaryId: s, applied: guard, sentAtMs: t, state: 'stream-wals', apiAddr: s, clusterAddr: 'c' };
        expect(decode.heartbeatRequest(viaBytes('Heartbeat', 'request', encode.heartbeatRequest(hb)))).toEqual(hb);
        const reply = { lastWal: index, lastCommitTimeMs: t, receivedAtMs: t, sentAtMs: 0 };
        expect(decode.heartbeatReply(viaBytes('Heartbeat', 'response', encode.heartbeatReply(reply)))).toEqual(reply);
        const boot = { clusterId: s, version: '1', primaryClusterAddr: 'a', primaryApiAddr: 'b', lastWal: index, epoch: 9 };
        expect(decode.bootstrapInfo(viaBytes('Bootstrap', 'response', encode.bootstrapInfo(boot)))).toEqual(boot);
        const snap = { snapshotId: s, guard, root: hash, subtreeRoots: [hash, Buffer.alloc(0)] };
        expect(decode.snapshotInfo(viaBytes('OpenSnapshot', 'response', encode.snapshotInfo(snap)))).toEqual(snap);
      }),
      { numRuns: 100 },
    );
    const req = { secondaryId: 's', version: 'v', kind: 'performance', apiAddr: 'a', clusterAddr: 'c' } as const;
    expect(decode.bootstrapRequest(viaBytes('Bootstrap', 'request', encode.bootstrapRequest(req)))).toEqual(req);
    const ping = { clusterId: 'c', nodeId: 'n', version: 'v', mode: 'secondary', apiAddr: 'a', clusterAddr: 'b' };
    expect(decode.pingInfo(viaBytes('Ping', 'response', encode.pingInfo(ping)))).toEqual(ping);
    const values = [{ key: 'a', value: Buffer.alloc(0) }, { key: 'b', value: undefined }, { key: 'c', value: Buffer.from([0, 1]) }];
    expect(decode.values(viaBytes('FetchValues', 'response', encode.values(values)))).toEqual(values);
    const leaves = [{ key: 'k', valueHash: Buffer.alloc(32, 1), subpage: 255 }];
    expect(decode.leaves(viaBytes('Leaves', 'response', encode.leaves(leaves)))).toEqual(leaves);
  });

  it("the primary cluster's addresses in Ping, Bootstrap and Heartbeat replies; none reads as absent", () => {
    const clusterAddrs = ['10.0.0.1:8201', '10.0.0.2:8201'];
    const ping = { clusterId: 'c', nodeId: 'n', version: 'v', mode: 'primary', apiAddr: 'a', clusterAddr: '10.0.0.1:8201', clusterAddrs };
    expect(decode.pingInfo(viaBytes('Ping', 'response', encode.pingInfo(ping)))).toEqual(ping);
    const boot = { clusterId: 'c', version: '1', primaryClusterAddr: '10.0.0.1:8201', primaryApiAddr: 'b', lastWal: 3n, epoch: 1, clusterAddrs };
    expect(decode.bootstrapInfo(viaBytes('Bootstrap', 'response', encode.bootstrapInfo(boot)))).toEqual(boot);
    const reply = { lastWal: 3n, lastCommitTimeMs: 1, receivedAtMs: 2, sentAtMs: 3, clusterAddrs };
    expect(decode.heartbeatReply(viaBytes('Heartbeat', 'response', encode.heartbeatReply(reply)))).toEqual(reply);
    // An older primary sends no field: the reply decodes with none (the address dialled is all there is).
    const old = { lastWal: 3n, lastCommitTimeMs: 1, receivedAtMs: 2, sentAtMs: 3 };
    expect(decode.heartbeatReply(viaBytes('Heartbeat', 'response', encode.heartbeatReply(old)))).toEqual(old);
  });

  it('a forwarded write and its reply, with no token anywhere in the message', () => {
    const fwd = {
      requestId: 'r-1', method: 'PUT', operation: 'update', namespace: 'team/', path: 'secret/data/é', trailingSlash: false,
      query: { cas: '1' }, body: { data: { v: [1, 'two', null] }, options: { cas: 0 } },
    };
    const raw = viaBytes('Forward', 'request', encode.forwardRequest('perf-east', fwd));
    expect(raw.secondaryId).toBe('perf-east');
    expect(Object.keys(raw).some((k) => /token/i.test(k))).toBe(false);
    expect(decode.forwardRequest(raw)).toEqual(fwd);
    for (const reply of [
      { kind: 'envelope', status: 200, body: { data: { version: 3 }, warnings: [], auth: null }, commitIndex: U64_MAX },
      { kind: 'none', status: 204, body: {}, commitIndex: 0n },
      { kind: 'error', status: 400, body: { errors: ['bad'] }, commitIndex: 7n },
    ] as const) {
      expect(decode.forwardReply(viaBytes('Forward', 'response', encode.forwardReply(reply)))).toEqual(reply);
    }
  });
});

describe('decode refuses what the proto cannot', () => {
  const start = (outcome: string): wire.StreamMessage => ({ start: { outcome, firstRetained: '0', lastWal: '0' } });

  it.each([
    ['a stream message without a body', () => decode.streamMessage({} as wire.StreamMessage)],
    ['an unknown outcome', () => decode.streamMessage(start('maybe'))],
    ['an unknown kind', () => decode.bootstrapRequest({ secondaryId: 's', version: 'v', kind: 'both', apiAddr: '', clusterAddr: '' })],
    ['a missing guard', () => decode.streamRequest({ secondaryId: 's', guard: null, maxBatchEntries: 1 })],
    ['a tree other than 1 or 2', () => decode.tree(0)],
    ['a time beyond a safe integer', () => decode.heartbeatReply({ lastWal: '0', lastCommitTimeMs: '9007199254740993', receivedAtMs: '0', sentAtMs: '0' })],
    ['a non-decimal uint64', () => decode.bootstrapInfo({ clusterId: '', version: '', primaryApiAddr: '', primaryClusterAddr: '', lastWal: '-1', epoch: 0 })],
    ['a negative index to send', () => encode.streamMessage({ type: 'start', outcome: 'ok', firstRetained: -1n, lastWal: 0n })],
    ['an index beyond uint64 to send', () => encode.streamMessage({ type: 'start', outcome: 'ok', firstRetained: 0n, lastWal: U64_MAX + 1n })],
    ['a forwarded body that is not a JSON object', () => decode.forwardRequest({ secondaryId: 's', requestId: '', method: 'PUT', operation: 'update', namespace: '', path: 'a', trailingSlash: false, query: {}, body: Buffer.from('[1]') })],
    ['a forwarded reply of an unknown kind', () => decode.forwardReply({ kind: 'partial', status: 200, body: Buffer.from('{}'), commitIndex: '1' })],
    ['a forwarded reply with no HTTP status', () => encode.forwardReply({ kind: 'none', status: 0, body: {}, commitIndex: 1n })],
    ['a fractional time to send', () => encode.streamMessage({ type: 'heartbeat', lastWal: 0n, lastCommitTimeMs: 1.5, sentAtMs: 0 })],
    ['a verified root that is not 32 bytes', () => decode.streamMessage({ heartbeat: { lastWal: '1', lastCommitTimeMs: '0', sentAtMs: '0', draining: false, ack: false, verifyWal: '1', verifyRoot: Buffer.alloc(31) } })],
    ['a verified root to send that is not 32 bytes', () => encode.streamMessage({ type: 'heartbeat', lastWal: 1n, lastCommitTimeMs: 0, sentAtMs: 0, verify: { wal: 1n, root: Buffer.alloc(33) } })],
  ])('%s', (_what, fn) => {
    expect(fn).toThrow(MalformedMessage);
  });
});
