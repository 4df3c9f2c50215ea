/**
 * The one suite every implementation of the replication channel passes (the PrimaryClient side of
 * src/replication/transport.ts): each call's success shape, each refusal as a ChannelError with
 * its reason, a primary that is down or unreachable, deadlines and cancellation, and a forward
 * never sent (not_sent) versus sent and then lost (an outcome the secondary cannot know). Run by
 * src/transport/grpc/contract.test.ts (real gRPC, mTLS on 127.0.0.1) and
 * test/support/loopback.test.ts (the in-process channel the replication tests use).
 *
 *   runChannelContract('grpc', async (service, pki) => {
 *     const server = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service });
 *     return { client: (id) => connectPrimary({ address: server.address, tls: pki.clientTls(id) }), ... };
 *   });
 */
import { InvalidRequest, Internal, NotFound, PermissionDenied, Unavailable } from '../../src/core/errors.js';
import type { WalEntry } from '../../src/core/wal.js';
import {
  ChannelError, type ClusterCall, type ForwardRequest, type Peer, type PrimaryClient, type PrimaryService, type StreamMessage,
} from '../../src/replication/transport.js';
import { FakePrimary, eventually, gate, makePki, type Pki } from '../../src/transport/grpc/testing/fixtures.js';

/** One channel under test, serving `service` to clients holding certificates of `pki`. */
export interface ChannelUnderTest {
  /** A client presenting the certificate `pki` issued to `id`. */
  client(id: string): PrimaryClient;
  /** A client whose certificate and trusted CA are another replication set's (`foreign`). */
  foreignClient(foreign: Pki): PrimaryClient;
  /** revoke-secondary on the serving end: ends `id`'s open calls. */
  disconnect(id: string): void;
  /** Stops serving: open calls end, new ones find no primary. Idempotent. */
  stop(): Promise<void>;
}

export type MakeChannel = (service: PrimaryService, pki: Pki) => Promise<ChannelUnderTest>;

/** Ids the contract's primary knows: `s1` active, `revoked` revoked; `stranger` holds a certificate of the set but is not registered. */
const IDS = ['s1', 'revoked', 'stranger'];

/** The FakePrimary with a registry: refuses the revoked id and any id it does not know. */
class RegistryPrimary extends FakePrimary {
  override authorize(peer: Peer, call: ClusterCall): void {
    super.authorize(peer, call);
    if (peer.secondaryId !== 's1') throw new PermissionDenied(`secondary ${peer.secondaryId} is not registered`);
  }
}

const hash = (b: number): Buffer => Buffer.alloc(32, b);
const guard = { index: 0n, hash: hash(0) };
const heartbeatReq = { secondaryId: 's1', applied: { index: 41n, hash: hash(9) }, sentAtMs: 1_700_000_000_000, state: 'stream-wals', apiAddr: 'a', clusterAddr: 'c' };
const forwardReq: ForwardRequest = { requestId: 'r1', method: 'PUT', operation: 'update', namespace: '', path: 'secret/data/a', trailingSlash: false, query: {}, body: { data: { v: 1 } } };
const entry = (i: bigint): WalEntry => ({
  index: i,
  epoch: 3,
  time: 1_700_000_000_000 + Number(i),
  ops: [{ type: 'put', key: `k${i}`, value: Buffer.from(`v${i}`) }, { type: 'del', key: `d${i}` }],
  hash: hash(Number(i % 256n)),
});

/** The ChannelError `p` rejects with (fails the test when it resolves or rejects with anything else). */
export async function rejection(p: Promise<unknown>): Promise<ChannelError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ChannelError);
  return e as ChannelError;
}

/** Opens a stream and collects it: messages, and how it ended. */
function stream(client: PrimaryClient, onMessage?: (m: StreamMessage, cancel: () => void) => void): { got: StreamMessage[]; ended: Promise<Error | undefined> } {
  const got: StreamMessage[] = [];
  let cancel = (): void => {};
  const ended = new Promise<Error | undefined>((resolve) => {
    const handle = client.streamWal({ secondaryId: 's1', guard, maxBatchEntries: 2 }, {
      onMessage: (m) => {
        got.push(m);
        onMessage?.(m, () => cancel());
      },
      onEnd: resolve,
    });
    cancel = () => handle.cancel();
  });
  return { got, ended };
}

export function runChannelContract(name: string, make: MakeChannel): void {
  describe(`replication channel contract: ${name}`, () => {
    let pki: Pki;
    let foreign: Pki;
    let fake: RegistryPrimary;
    let channel: ChannelUnderTest;
    const clients: PrimaryClient[] = [];
    const connect = (id = 's1'): PrimaryClient => {
      const c = channel.client(id);
      clients.push(c);
      return c;
    };

    beforeAll(async () => {
      pki = await makePki(IDS);
      foreign = await makePki(['s1'], 'cluster-2');
    });
    beforeEach(async () => {
      fake = new RegistryPrimary();
      fake.refused.add('revoked');
      channel = await make(fake, pki);
    });
    afterEach(async () => {
      for (const c of clients.splice(0)) c.close();
      await channel.stop();
    });

    describe('each call answers with its shape, authorized for the certificate\'s id', () => {
      it('ping, bootstrap and heartbeat', async () => {
        const client = connect();
        expect(await client.ping('s1', 2_000)).toEqual(fake.pingInfo);
        const req = { secondaryId: 's1', version: '0.1.0', kind: 'dr', apiAddr: 'https://s1:8200', clusterAddr: 's1:8201' } as const;
        expect(await client.bootstrap(req)).toEqual(await fake.onBootstrap(req));
        expect(await client.heartbeat(heartbeatReq)).toEqual({ lastWal: 42n, lastCommitTimeMs: 1_700_000_000_123, receivedAtMs: 1_700_000_000_001, sentAtMs: 1_700_000_000_002 });
        expect(fake.calls.map((c) => [c.method, c.peer?.secondaryId])).toEqual([['ping', 's1'], ['bootstrap', 's1'], ['heartbeat', 's1']]);
        expect(fake.calls.map((c) => c.args)).toEqual([[], [req], [heartbeatReq]]);
        expect(fake.authorizedCalls).toEqual(['ping', 'bootstrap', 'heartbeat']);
        expect(client.connectionState()).toBe('ready');
      });

      it('the Merkle reconciliation calls', async () => {
        const client = connect();
        expect(await client.openSnapshot('s1')).toEqual(await fake.onOpenSnapshot());
        expect(await client.pageHashes('snap-1', 2)).toEqual([hash(2), Buffer.alloc(0), Buffer.from('ff', 'hex')]);
        expect(await client.subpageHashes('snap-1', 1, 300)).toEqual([hash(300 % 256)]);
        expect(await client.leaves('snap-1', 1, 4, [0, 7])).toEqual([
          { key: 'k/4/0/é', valueHash: hash(0), subpage: 0 },
          { key: 'k/4/7/é', valueHash: hash(7), subpage: 7 },
        ]);
        expect(await client.fetchValues('snap-1', ['a', 'gone/b'])).toEqual([
          { key: 'a', value: Buffer.from('v:a') },
          { key: 'gone/b', value: undefined },
        ]);
        await expect(client.closeSnapshot('snap-1')).resolves.toBeUndefined();
        expect(fake.authorizedCalls).toEqual(Array(6).fill('reconcile'));
      });

      it('forward carries the request and answers the primary\'s reply', async () => {
        const reply = await connect().forward('s1', forwardReq, 2_000);
        expect(reply).toEqual({ kind: 'envelope', status: 200, body: { data: { echoed: forwardReq.body, path: forwardReq.path }, warnings: [] }, commitIndex: 2n ** 63n + 1n });
        expect(fake.calls.map((c) => [c.method, c.args[0]])).toEqual([['forward', forwardReq]]);
        expect(fake.authorizedCalls).toEqual(['forward']);
      });

      it('a WAL stream delivers start, batches and heartbeats in order, then ends without an error', async () => {
        const sent: StreamMessage[] = [
          { type: 'start', outcome: 'ok', firstRetained: 1n, lastWal: 3n },
          { type: 'batch', entries: [entry(1n), entry(2n)], primaryLastWal: 3n, primaryCommitTimeMs: 1_700_000_000_500 },
          { type: 'batch', entries: [entry(3n)], primaryLastWal: 3n, primaryCommitTimeMs: 1_700_000_000_501 },
          { type: 'heartbeat', lastWal: 3n, lastCommitTimeMs: 5, sentAtMs: 6, verify: { wal: 3n, root: hash(7) } },
        ];
        fake.onStream = (_peer, _req, sink) => {
          void (async () => {
            for (const m of sent) await sink.send(m);
            sink.end();
          })();
        };
        const s = stream(connect());
        expect(await s.ended).toBeUndefined();
        expect(s.got).toEqual(sent);
        expect(fake.calls[0]?.args).toEqual([{ guard, maxBatchEntries: 2 }]);
        expect(fake.authorizedCalls).toEqual(['stream']);
      });

      it('a guard the primary does not hold is a start message, not an error', async () => {
        fake.onStream = (_p, _r, sink) => void sink.send({ type: 'start', outcome: 'non_matching_guard', firstRetained: 40n, lastWal: 90n }).then(() => sink.end());
        const s = stream(connect());
        expect(await s.ended).toBeUndefined();
        expect(s.got).toEqual([{ type: 'start', outcome: 'non_matching_guard', firstRetained: 40n, lastWal: 90n }]);
      });
    });

    describe('refusals are ChannelErrors with a reason and the primary\'s message', () => {
      it.each(['revoked', 'stranger'])('a %s secondary is permission_denied on every call and its stream', async (id) => {
        const client = connect(id);
        const calls: Promise<unknown>[] = [
          client.ping(id, 2_000),
          client.bootstrap({ secondaryId: id, version: '0.1.0', kind: 'dr', apiAddr: '', clusterAddr: '' }),
          client.heartbeat({ ...heartbeatReq, secondaryId: id }),
          client.openSnapshot(id),
          client.fetchValues('snap-1', ['a']),
          client.forward(id, forwardReq, 2_000),
        ];
        const message = id === 'revoked' ? 'secondary revoked is revoked' : 'secondary stranger is not registered';
        for (const call of calls) {
          const e = await rejection(call);
          expect([e.reason, e.refused, e.code, e.message]).toEqual(['permission_denied', true, 'permission_denied', message]);
        }
        const ended = await stream(client).ended;
        expect(ended).toBeInstanceOf(ChannelError);
        expect([(ended as ChannelError).reason, ended?.message]).toEqual(['permission_denied', message]);
        expect(fake.calls).toEqual([]);
      });

      it('a primary that refuses in its state (another kind, a bad guard, an unknown snapshot) is failed_precondition', async () => {
        const client = connect();
        fake.onBootstrap = async () => {
          throw new InvalidRequest('this cluster is a dr primary, not performance');
        };
        const e = await rejection(client.bootstrap({ secondaryId: 's1', version: '0.1.0', kind: 'performance', apiAddr: '', clusterAddr: '' }));
        expect([e.reason, e.refused, e.code, e.message]).toEqual(['failed_precondition', true, 'invalid_request', 'this cluster is a dr primary, not performance']);
        fake.onCloseSnapshot = async () => {
          throw new NotFound('unknown snapshot snap-9');
        };
        const gone = await rejection(client.closeSnapshot('snap-9'));
        expect([gone.reason, gone.message]).toEqual(['failed_precondition', 'unknown snapshot snap-9']);
        fake.onStream = (_p, _r, sink) => sink.fail(new InvalidRequest('guard from another cluster'));
        const ended = await stream(client).ended;
        expect([(ended as ChannelError).reason, ended?.message]).toEqual(['failed_precondition', 'guard from another cluster']);
      });

      it('a primary that cannot serve now (too new a version, sealed, starting up) is unavailable, not a refusal', async () => {
        const client = connect();
        fake.onBootstrap = async () => {
          throw new Unavailable('primary runs 0.2.0 but this secondary runs 0.1.0');
        };
        const e = await rejection(client.bootstrap({ secondaryId: 's1', version: '0.1.0', kind: 'dr', apiAddr: '', clusterAddr: '' }));
        expect([e.reason, e.refused, e.message]).toEqual(['unavailable', false, 'primary runs 0.2.0 but this secondary runs 0.1.0']);
      });

      it('a failure on the primary is internal and tells nothing of it', async () => {
        const client = connect();
        fake.onHeartbeat = async () => {
          throw new Internal('invariant broken at /data/x');
        };
        const e = await rejection(client.heartbeat(heartbeatReq));
        expect([e.reason, e.refused, e.message]).toEqual(['internal', false, 'internal error']);
        fake.onForward = async () => {
          throw new Error('ENOENT /secret');
        };
        expect(await rejection(client.forward('s1', forwardReq, 2_000))).toMatchObject({ reason: 'internal', message: 'internal error' });
      });

      it('revoke-secondary ends the id\'s open calls as permission_denied', async () => {
        const client = connect();
        const hung = gate();
        fake.onForward = () => hung.promise as never;
        const forward = rejection(client.forward('s1', forwardReq, 5_000));
        fake.onStream = () => {};
        const s = stream(client);
        await eventually(() => expect(fake.methods().sort()).toEqual(['forward', 'streamWal']));
        channel.disconnect('s1');
        expect(await forward).toMatchObject({ reason: 'permission_denied', message: 'secondary revoked' });
        const ended = await s.ended;
        expect([(ended as ChannelError).reason, ended?.message]).toEqual(['permission_denied', 'secondary revoked']);
        hung.open();
      });
    });

    describe('a primary that is down or unreachable', () => {
      it('after it stops: calls are unavailable, a stream ends unavailable, a forward is not_sent and never arrives', async () => {
        const client = connect();
        await client.ping('s1', 2_000);
        await channel.stop();
        fake.calls.length = 0;
        expect((await rejection(client.ping('s1', 2_000))).reason).toBe('unavailable');
        expect((await rejection(connect().heartbeat(heartbeatReq))).reason).toBe('unavailable');
        const ended = await stream(connect()).ended;
        expect((ended as ChannelError).reason).toBe('unavailable');
        const e = await rejection(connect().forward('s1', forwardReq, 3_000));
        expect([e.reason, e.refused, e.code]).toEqual(['not_sent', false, 'unavailable']);
        expect(fake.calls).toEqual([]);
        expect(client.connectionState()).not.toBe('ready');
      });

      it('stopping ends open calls as unavailable', async () => {
        const client = connect();
        fake.onStream = (_p, _r, sink) => void sink.send({ type: 'start', outcome: 'ok', firstRetained: 1n, lastWal: 0n });
        const s = stream(client);
        await eventually(() => expect(s.got).toHaveLength(1));
        await channel.stop();
        expect(((await s.ended) as ChannelError).reason).toBe('unavailable');
      });

      it('a certificate of another set finds no primary: unavailable, and a forward not_sent', async () => {
        const client = channel.foreignClient(foreign);
        clients.push(client);
        expect((await rejection(client.ping('s1', 2_000))).reason).toBe('unavailable');
        expect((await rejection(client.forward('s1', forwardReq, 3_000))).reason).toBe('not_sent');
        expect(fake.authorized).toEqual([]);
      });
    });

    describe('deadlines and cancellation', () => {
      it('a call that outlives its deadline is deadline', async () => {
        const client = connect();
        fake.ping = () => new Promise(() => {});
        const started = Date.now();
        const e = await rejection(client.ping('s1', 200));
        expect([e.reason, e.refused, e.code]).toEqual(['deadline', false, 'unavailable']);
        expect(Date.now() - started).toBeLessThan(2_000);
      });

      it('cancel() ends a stream without an error and closes the primary\'s sink', async () => {
        fake.onStream = (_p, _r, sink) => void sink.send({ type: 'heartbeat', lastWal: 1n, lastCommitTimeMs: 1, sentAtMs: 1 });
        const s = stream(connect(), (_m, cancel) => cancel());
        expect(await s.ended).toBeUndefined();
        const sink = fake.sinks.get('s1');
        await eventually(() => expect(sink?.closed).toBe(true));
        await expect(sink?.send({ type: 'heartbeat', lastWal: 1n, lastCommitTimeMs: 1, sentAtMs: 1 })).rejects.toMatchObject({ code: 'unavailable' });
      });

      it('a throwing onMessage ends the stream with that error, and the primary\'s sink closes', async () => {
        fake.onStream = (_p, _r, sink) => void sink.send({ type: 'heartbeat', lastWal: 1n, lastCommitTimeMs: 1, sentAtMs: 1 }).catch(() => undefined);
        const boom = new Error('apply failed');
        const s = stream(connect(), () => {
          throw boom;
        });
        expect(await s.ended).toBe(boom);
        await eventually(() => expect(fake.sinks.get('s1')?.closed).toBe(true));
      });

      it('close() ends the client\'s streams without an error; later calls are unavailable', async () => {
        const client = connect();
        fake.onStream = (_p, _r, sink) => void sink.send({ type: 'start', outcome: 'ok', firstRetained: 1n, lastWal: 0n });
        const s = stream(client);
        await eventually(() => expect(s.got).toHaveLength(1));
        client.close();
        expect(await s.ended).toBeUndefined();
        expect(client.connectionState()).toBe('shutdown');
        expect(await rejection(client.ping('s1', 1_000))).toMatchObject({ reason: 'unavailable', message: 'replication client is closed' });
        expect(await rejection(client.forward('s1', forwardReq, 1_000))).toMatchObject({ reason: 'unavailable', message: 'replication client is closed' });
      });
    });

    describe('a forward: never sent versus sent and then lost', () => {
      it('sent, then no answer in time: deadline (the outcome is unknown), and the primary got it', async () => {
        const hung = gate();
        fake.onForward = () => hung.promise as never;
        const e = await rejection(connect().forward('s1', forwardReq, 300));
        expect([e.reason, e.refused]).toEqual(['deadline', false]);
        expect(fake.methods()).toEqual(['forward']);
        hung.open();
      });

      it('sent, then the primary went away: unavailable (the outcome is unknown), never not_sent', async () => {
        const hung = gate();
        fake.onForward = () => hung.promise as never;
        const forward = rejection(connect().forward('s1', forwardReq, 5_000));
        await eventually(() => expect(fake.methods()).toEqual(['forward']));
        await channel.stop();
        const e = await forward;
        expect([e.reason, e.refused]).toEqual(['unavailable', false]);
        hung.open();
      });
    });
  });
}
