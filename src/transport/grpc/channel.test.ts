/** Every RPC over real gRPC + mTLS on 127.0.0.1, against a recording fake PrimaryService. */
import { status as Status } from '@grpc/grpc-js';
import { InvalidRequest, NotFound, Unavailable } from '../../core/errors.js';
import type { WalEntry } from '../../core/wal.js';
import type { PrimaryClient, ReplicationServer, StreamMessage } from '../../replication/transport.js';
import { ChannelError, connectPrimary, serveReplication } from './index.js';
import { rejection } from '../../../test/support/channel-contract.js';
import { grpcCodeOf } from './status.js';
import { FakePrimary, makePki, type Pki } from './testing/fixtures.js';

const BIG = 2n ** 64n - 1n;
const hash = (b: number): Buffer => Buffer.alloc(32, b);

let pki: Pki;
let fake: FakePrimary;
let server: ReplicationServer;
let client: PrimaryClient;
const logged: unknown[] = [];

beforeAll(async () => {
  pki = await makePki(['s1']);
});

beforeEach(async () => {
  fake = new FakePrimary();
  logged.length = 0;
  server = await serveReplication({
    address: '127.0.0.1:0',
    tls: pki.serverTls,
    service: fake,
    log: { error: (obj) => logged.push(obj) },
  });
  client = connectPrimary({ address: server.address, tls: pki.clientTls('s1'), defaultDeadlineMs: 2_000 });
});

afterEach(async () => {
  client.close();
  await server.close();
});

describe('unary calls round-trip exact values', () => {
  it('binds a free port and reports it; a taken port is Unavailable', async () => {
    expect(server.address).toMatch(/^127\.0\.0\.1:[1-9]\d*$/);
    await expect(serveReplication({ address: server.address, tls: pki.serverTls, service: fake })).rejects.toBeInstanceOf(Unavailable);
  });

  it('ping is authorized like every call, for the certificate\'s id', async () => {
    expect(await client.ping('s1', 1_000)).toEqual(fake.pingInfo);
    expect(fake.calls.map((c) => [c.method, c.peer?.secondaryId])).toEqual([['ping', 's1']]);
    expect(fake.authorized.map((p) => p.secondaryId)).toEqual(['s1']);
    expect(fake.authorizedCalls).toEqual(['ping']);
    expect(client.connectionState()).toBe('ready');
  });

  it('bootstrap carries the request and a uint64 beyond 2^63, and the authenticated peer', async () => {
    const req = { secondaryId: 's1', version: '0.1.0', kind: 'dr', apiAddr: 'https://s1:8200', clusterAddr: 's1:8201' } as const;
    const info = await client.bootstrap(req);
    expect(info).toEqual({
      clusterId: 'cluster-1',
      version: '0.1.0',
      primaryClusterAddr: '10.0.0.1:8201',
      primaryApiAddr: 'https://10.0.0.1:8200',
      lastWal: 2n ** 63n + 5n,
      epoch: 7,
    });
    const call = fake.calls[0];
    expect(call?.args).toEqual([req]);
    expect(call?.peer?.secondaryId).toBe('s1');
    expect(call?.peer?.fingerprint).toBe(pki.leaves.get('s1')?.fingerprint);
    expect(call?.peer?.address).toMatch(/127\.0\.0\.1:\d+$/);
    expect(fake.authorized.map((p) => p.secondaryId)).toEqual(['s1']);
  });

  it('heartbeat keeps the guard and times exact', async () => {
    const req = { secondaryId: 's1', applied: { index: BIG - 1n, hash: hash(9) }, sentAtMs: 1_700_000_000_000, state: 'stream-wals', apiAddr: 'a', clusterAddr: 'c' };
    expect(await client.heartbeat(req)).toEqual({ lastWal: BIG, lastCommitTimeMs: 1_700_000_000_123, receivedAtMs: 1_700_000_000_001, sentAtMs: 1_700_000_000_002 });
    expect(fake.calls[0]?.args).toEqual([req]);
  });

  it('the Merkle reconciliation calls carry trees, pages, keys and missing values', async () => {
    expect(await client.openSnapshot('s1')).toEqual(await fake.onOpenSnapshot());
    expect(await client.pageHashes('snap-1', 2)).toEqual([hash(2), Buffer.alloc(0), Buffer.from('ff', 'hex')]);
    expect(await client.subpageHashes('snap-1', 1, 300)).toEqual([hash(300 % 256)]);
    expect(await client.leaves('snap-1', 1, 4, [0, 7])).toEqual([
      { key: 'k/4/0/é', valueHash: hash(0), subpage: 0 },
      { key: 'k/4/7/é', valueHash: hash(7), subpage: 7 },
    ]);
    expect(await client.fetchValues('snap-1', ['a', 'gone/b', ''])).toEqual([
      { key: 'a', value: Buffer.from('v:a') },
      { key: 'gone/b', value: undefined },
      { key: '', value: Buffer.from('v:') },
    ]);
    await expect(client.closeSnapshot('snap-1')).resolves.toBeUndefined();
    expect(fake.calls.map((c) => [c.method, ...c.args])).toEqual([
      ['openSnapshot'],
      ['pageHashes', 'snap-1', 2],
      ['subpageHashes', 'snap-1', 1, 300],
      ['leaves', 'snap-1', 1, 4, [0, 7]],
      ['fetchValues', 'snap-1', ['a', 'gone/b', '']],
      ['closeSnapshot', 'snap-1'],
    ]);
  });
});

describe('the Forward call', () => {
  it('carries a forwarded write to the primary, authorized as "forward" for the certificate\'s id', async () => {
    const req = { requestId: 'r', method: 'PUT', operation: 'update', namespace: '', path: 'secret/data/a', trailingSlash: false, query: {}, body: { data: { v: 1 } } };
    const reply = await client.forward('s1', req);
    expect(reply).toEqual({ kind: 'envelope', status: 200, body: { data: { echoed: req.body, path: req.path }, warnings: [] }, commitIndex: 2n ** 63n + 1n });
    expect(fake.calls.map((c) => [c.method, c.peer?.secondaryId, c.args[0]])).toEqual([['forward', 's1', req]]);
    expect(fake.authorizedCalls).toEqual(['forward']);
  });
});

describe('errors map through the status table', () => {
  it('an InvalidRequest refusal is failed_precondition with its message', async () => {
    fake.onBootstrap = async () => {
      throw new InvalidRequest('upgrade the secondary first');
    };
    const e = await rejection(client.bootstrap({ secondaryId: 's1', version: '0.0.1', kind: 'dr', apiAddr: '', clusterAddr: '' }));
    expect([e.reason, grpcCodeOf(e), e.code]).toEqual(['failed_precondition', Status.FAILED_PRECONDITION, 'invalid_request']);
    expect(e.message).toBe('upgrade the secondary first');
  });

  it('NotFound is failed_precondition with grpc NOT_FOUND', async () => {
    fake.onCloseSnapshot = async (id) => {
      throw new NotFound(`snapshot ${id} is gone`);
    };
    const e = await rejection(client.closeSnapshot('snap-9'));
    expect([e.reason, grpcCodeOf(e), e.message]).toEqual(['failed_precondition', Status.NOT_FOUND, 'snapshot snap-9 is gone']);
  });

  it('an unexpected error is a bare internal, logged, its text not sent', async () => {
    fake.onOpenSnapshot = async () => {
      throw new Error('disk path /secret/x');
    };
    const e = await rejection(client.openSnapshot('s1'));
    expect([e.reason, grpcCodeOf(e), e.message]).toEqual(['internal', Status.INTERNAL, 'internal error']);
    expect(JSON.stringify(logged)).not.toBe('[]');
    expect((logged[0] as { err: Error }).err.message).toBe('disk path /secret/x');
  });

  it('a tree other than 1 or 2 is invalid_argument before reaching the service', async () => {
    const e = await rejection(client.pageHashes('snap-1', 3 as 1));
    expect(e.reason).toBe('invalid_argument');
    expect(fake.methods()).toEqual([]);
  });

  it('a call that outlives its deadline rejects with deadline', async () => {
    fake.onHeartbeat = () => new Promise(() => {});
    const short = connectPrimary({ address: server.address, tls: pki.clientTls('s1'), defaultDeadlineMs: 150 });
    const started = Date.now();
    const e = await rejection(short.heartbeat({ secondaryId: 's1', applied: { index: 0n, hash: hash(0) }, sentAtMs: 0, state: '', apiAddr: '', clusterAddr: '' }));
    expect(e.reason).toBe('deadline');
    expect(Date.now() - started).toBeLessThan(1_500);
    short.close();
  });

  it('a closed client rejects with unavailable and reports shutdown', async () => {
    client.close();
    expect(client.connectionState()).toBe('shutdown');
    expect((await rejection(client.ping('s1'))).reason).toBe('unavailable');
  });
});

describe('the WAL stream', () => {
  const entry = (i: bigint): WalEntry => ({
    index: i,
    epoch: 3,
    time: 1_700_000_000_000 + Number(i % 1000n),
    ops: [
      { type: 'put', key: `k${i}`, value: Buffer.from(`v${i}`) },
      { type: 'put', key: 'empty', value: Buffer.alloc(0) },
      { type: 'del', key: `d${i}` },
    ],
    hash: hash(Number(i % 256n)),
  });

  it('delivers start, batches and heartbeats in order with exact values, then ends cleanly', async () => {
    const base = 2n ** 53n + 1n;
    const sent: StreamMessage[] = [
      { type: 'start', outcome: 'ok', firstRetained: 1n, lastWal: base + 9n },
      ...Array.from({ length: 10 }, (_, n): StreamMessage => ({
        type: 'batch',
        entries: [entry(base + BigInt(2 * n)), entry(base + BigInt(2 * n + 1))],
        primaryLastWal: base + 19n,
        primaryCommitTimeMs: 1_700_000_000_500 + n,
      })),
      { type: 'heartbeat', lastWal: BIG, lastCommitTimeMs: 5, sentAtMs: 6 },
    ];
    fake.onStream = (_peer, _req, sink) => {
      void (async () => {
        for (const m of sent) await sink.send(m);
        sink.end();
      })();
    };
    const got: StreamMessage[] = [];
    const ended = await new Promise<Error | undefined>((resolve) => {
      client.streamWal({ secondaryId: 's1', guard: { index: base - 1n, hash: hash(1) }, maxBatchEntries: 2 }, {
        onMessage: (m) => void got.push(m),
        onEnd: resolve,
      });
    });
    expect(ended).toBeUndefined();
    expect(got).toEqual(sent);
    expect(fake.calls[0]?.args).toEqual([{ guard: { index: base - 1n, hash: hash(1) }, maxBatchEntries: 2 }]);
    expect(fake.sinks.get('s1')?.closed).toBe(true);
  });

  it('not_retained then end, as the contract says', async () => {
    fake.onStream = (_p, _r, sink) => {
      void sink.send({ type: 'start', outcome: 'not_retained', firstRetained: 40n, lastWal: 90n }).then(() => sink.end());
    };
    const got: StreamMessage[] = [];
    await new Promise<void>((resolve) => {
      client.streamWal({ secondaryId: 's1', guard: { index: 3n, hash: hash(3) }, maxBatchEntries: 1 }, {
        onMessage: (m) => void got.push(m),
        onEnd: () => resolve(),
      });
    });
    expect(got).toEqual([{ type: 'start', outcome: 'not_retained', firstRetained: 40n, lastWal: 90n }]);
  });

  it('sink.fail ends the stream with the mapped status', async () => {
    fake.onStream = (_p, _r, sink) => sink.fail(new InvalidRequest('guard from another cluster'));
    const error = await new Promise<Error | undefined>((resolve) => {
      client.streamWal({ secondaryId: 's1', guard: { index: 0n, hash: hash(0) }, maxBatchEntries: 1 }, { onMessage: () => {}, onEnd: resolve });
    });
    expect(error).toBeInstanceOf(ChannelError);
    expect([(error as ChannelError).reason, error?.message]).toEqual(['failed_precondition', 'guard from another cluster']);
  });

  it('cancel() ends it without an error and closes the server sink', async () => {
    fake.onStream = (_p, _r, sink) => void sink.send({ type: 'heartbeat', lastWal: 1n, lastCommitTimeMs: 1, sentAtMs: 1 });
    const ended = new Promise<Error | undefined>((resolve) => {
      const handle = client.streamWal({ secondaryId: 's1', guard: { index: 0n, hash: hash(0) }, maxBatchEntries: 1 }, {
        onMessage: () => handle.cancel(),
        onEnd: resolve,
      });
    });
    expect(await ended).toBeUndefined();
    const sink = fake.sinks.get('s1');
    await new Promise<void>((resolve) => sink?.onClose(resolve));
    expect(sink?.closed).toBe(true);
    await expect(sink?.send({ type: 'heartbeat', lastWal: 1n, lastCommitTimeMs: 1, sentAtMs: 1 })).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('a throwing onMessage cancels the stream and is reported as is', async () => {
    fake.onStream = (_p, _r, sink) => void sink.send({ type: 'heartbeat', lastWal: 1n, lastCommitTimeMs: 1, sentAtMs: 1 });
    const boom = new Error('apply failed');
    const ended = await new Promise<Error | undefined>((resolve) => {
      client.streamWal({ secondaryId: 's1', guard: { index: 0n, hash: hash(0) }, maxBatchEntries: 1 }, {
        onMessage: () => {
          throw boom;
        },
        onEnd: resolve,
      });
    });
    expect(ended).toBe(boom);
    await new Promise<void>((resolve) => fake.sinks.get('s1')?.onClose(resolve));
  });
});
