/**
 * One cluster port for both replication kinds: SNI picks the kind's server certificate and CA,
 * each kind's secondaries reach their own service only, a certificate of one kind is refused under
 * the other's name, and kinds come and go without restarting the listener.
 */
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { InvalidRequest } from '../../core/errors.js';
import type { PrimaryClient, ReplicationServer, StreamMessage, TlsMaterial } from '../../replication/transport.js';
import { ChannelError, connectPrimary, createClusterServer, type ClusterServer } from './index.js';
import { FakePrimary, eventually, makePki, type Pki } from './testing/fixtures.js';

const DR_NAME = 'primary.dr-set.tessera';
const PERF_NAME = 'primary.perf-set.tessera';
const guard = { index: 0n, hash: Buffer.alloc(32) };

let dr: Pki;
let perf: Pki;
let cluster: ClusterServer;
let drFake: FakePrimary;
let perfFake: FakePrimary;
const clients: PrimaryClient[] = [];

beforeAll(async () => {
  [dr, perf] = await Promise.all([makePki(['s1', 'dr-east'], 'dr-set', DR_NAME), makePki(['s1', 'perf-east'], 'perf-set', PERF_NAME)]);
});

beforeEach(() => {
  cluster = createClusterServer({ address: '127.0.0.1:0', closeGraceMs: 300 });
  drFake = new FakePrimary();
  perfFake = new FakePrimary();
  drFake.pingInfo = { ...drFake.pingInfo, clusterId: 'dr-set' };
  perfFake.pingInfo = { ...perfFake.pingInfo, clusterId: 'perf-set' };
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await cluster.close();
});

const serveBoth = async (): Promise<[ReplicationServer, ReplicationServer]> => [
  await cluster.serve({ kind: 'dr', tls: dr.serverTls, service: drFake }),
  await cluster.serve({ kind: 'performance', tls: perf.serverTls, service: perfFake }),
];

function connect(address: string, tls: TlsMaterial): PrimaryClient {
  const client = connectPrimary({ address, tls, defaultDeadlineMs: 2_000 });
  clients.push(client);
  return client;
}

async function refusal(p: Promise<unknown>): Promise<ChannelError> {
  const e = await p.then(
    () => {
      throw new Error('expected the call to be refused');
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ChannelError);
  return e as ChannelError;
}

/** Follows a WAL stream, keeping what arrives and how it ended. */
function follow(client: PrimaryClient, secondaryId: string): { got: StreamMessage[]; ended: Promise<Error | undefined> } {
  const got: StreamMessage[] = [];
  const ended = new Promise<Error | undefined>((resolve) => {
    client.streamWal({ secondaryId, guard, maxBatchEntries: 8 }, { onMessage: (m) => void got.push(m), onEnd: resolve });
  });
  return { got, ended };
}

/** The stream's primary side sends a heartbeat every 20 ms until the stream closes. */
function beat(fake: FakePrimary): void {
  fake.onStream = (_peer, _req, sink) => {
    const timer = setInterval(() => {
      if (sink.closed) return clearInterval(timer);
      sink.send({ type: 'heartbeat', lastWal: 1n, lastCommitTimeMs: 1, sentAtMs: Date.now() }).catch(() => clearInterval(timer));
    }, 20);
  };
}

describe('both kinds on one port', () => {
  it('each kind’s secondaries reach their own service on the same address, and stream', async () => {
    const [d, p] = await serveBoth();
    expect(p.address).toBe(d.address);
    beat(drFake);
    beat(perfFake);
    const drClient = connect(d.address, dr.clientTls('dr-east'));
    const perfClient = connect(p.address, perf.clientTls('perf-east'));
    expect((await drClient.ping('dr-east')).clusterId).toBe('dr-set');
    expect((await perfClient.ping('perf-east')).clusterId).toBe('perf-set');
    const drStream = follow(drClient, 'dr-east');
    const perfStream = follow(perfClient, 'perf-east');
    await eventually(() => expect(Math.min(drStream.got.length, perfStream.got.length)).toBeGreaterThan(2));
    expect(drFake.calls.map((c) => [c.method, c.peer?.secondaryId])).toEqual([['ping', 'dr-east'], ['streamWal', 'dr-east']]);
    expect(perfFake.calls.map((c) => [c.method, c.peer?.secondaryId])).toEqual([['ping', 'perf-east'], ['streamWal', 'perf-east']]);
    expect(drFake.authorized.map((peer) => peer.fingerprint)).toEqual([dr.leaves.get('dr-east')?.fingerprint, dr.leaves.get('dr-east')?.fingerprint]);
    expect(perfFake.authorized.map((peer) => peer.fingerprint)).toEqual([perf.leaves.get('perf-east')?.fingerprint, perf.leaves.get('perf-east')?.fingerprint]);
  });

  it('a DR client certificate is refused under the performance server name, and the reverse', async () => {
    const [d] = await serveBoth();
    // The client trusts the server it asks for; only its own certificate is of the other kind.
    const drCertOnPerf = { ...dr.clientTls('s1'), caPem: perf.serverTls.caPem, serverName: PERF_NAME };
    const perfCertOnDr = { ...perf.clientTls('s1'), caPem: dr.serverTls.caPem, serverName: DR_NAME };
    expect((await refusal(connect(d.address, drCertOnPerf).ping('s1', 2_000))).reason).toBe('unavailable');
    expect((await refusal(connect(d.address, perfCertOnDr).ping('s1', 2_000))).reason).toBe('unavailable');
    expect([drFake.authorized, perfFake.authorized, drFake.calls, perfFake.calls]).toEqual([[], [], [], []]);
    // The same certificates under their own names are served (so the refusals were the kind).
    await connect(d.address, dr.clientTls('s1')).ping('s1', 2_000);
    await connect(d.address, perf.clientTls('s1')).ping('s1', 2_000);
    expect([drFake.methods(), perfFake.methods()]).toEqual([['ping'], ['ping']]);
  });

  it('a client asking for an unknown server name, or none, is refused in the handshake', async () => {
    const [d] = await serveBoth();
    const unknown = { ...dr.clientTls('s1'), serverName: 'primary.elsewhere.tessera' };
    expect((await refusal(connect(d.address, unknown).ping('s1', 2_000))).reason).toBe('unavailable');
    // No SNI at all (a bare IP): the default context has no certificate, so no handshake.
    const port = Number(d.address.slice(d.address.lastIndexOf(':') + 1));
    const outcome = await new Promise<string>((resolve) => {
      const socket = tlsConnect({ host: '127.0.0.1', port, ca: dr.serverTls.caPem, cert: dr.clientTls('s1').certPem, key: dr.clientTls('s1').keyPem, ALPNProtocols: ['h2'], rejectUnauthorized: false });
      socket.once('secureConnect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    expect(outcome).not.toBe('connected');
    expect([drFake.authorized, perfFake.authorized]).toEqual([[], []]);
  });

  it('disconnect is keyed by (kind, id): the same id of the other kind keeps streaming', async () => {
    const [d, p] = await serveBoth();
    beat(drFake);
    beat(perfFake);
    const drStream = follow(connect(d.address, dr.clientTls('s1')), 's1');
    const perfStream = follow(connect(p.address, perf.clientTls('s1')), 's1');
    await eventually(() => expect(Math.min(drStream.got.length, perfStream.got.length)).toBeGreaterThan(2));
    d.disconnect('s1');
    const error = await drStream.ended;
    expect([(error as ChannelError).reason, error?.message]).toEqual(['permission_denied', 'secondary revoked']);
    const before = perfStream.got.length;
    await eventually(() => expect(perfStream.got.length).toBeGreaterThan(before + 3));
    expect(perfFake.sinks.get('s1')?.closed).toBe(false);
  });

  it('two kinds cannot claim the same server name', async () => {
    await cluster.serve({ kind: 'dr', tls: dr.serverTls, service: drFake });
    await expect(cluster.serve({ kind: 'performance', tls: { ...perf.serverTls, serverName: DR_NAME }, service: perfFake })).rejects.toBeInstanceOf(InvalidRequest);
  });
});

describe('kinds come and go without restarting the listener', () => {
  it('adding a kind keeps the other’s stream; removing one ends its calls and refuses its handshakes; the last one closes the port', async () => {
    const d = await cluster.serve({ kind: 'dr', tls: dr.serverTls, service: drFake });
    beat(drFake);
    beat(perfFake);
    const drStream = follow(connect(d.address, dr.clientTls('dr-east')), 'dr-east');
    await eventually(() => expect(drStream.got.length).toBeGreaterThan(2));
    // Not served yet: the performance name has no certificate.
    expect((await refusal(connect(d.address, perf.clientTls('perf-east')).ping('perf-east', 2_000))).reason).toBe('unavailable');

    const p = await cluster.serve({ kind: 'performance', tls: perf.serverTls, service: perfFake });
    expect(p.address).toBe(d.address);
    const perfStream = follow(connect(p.address, perf.clientTls('perf-east')), 'perf-east');
    await eventually(() => expect(perfStream.got.length).toBeGreaterThan(2));
    const drBefore = drStream.got.length;
    await eventually(() => expect(drStream.got.length).toBeGreaterThan(drBefore + 2));
    expect(drFake.sinks.get('dr-east')?.closed).toBe(false);

    await d.close();
    expect(((await drStream.ended) as ChannelError).reason).toBe('unavailable');
    expect((await refusal(connect(d.address, dr.clientTls('dr-east')).ping('dr-east', 2_000))).reason).toBe('unavailable');
    const perfBefore = perfStream.got.length;
    await eventually(() => expect(perfStream.got.length).toBeGreaterThan(perfBefore + 2));
    expect((await connect(p.address, perf.clientTls('perf-east')).ping('perf-east')).clusterId).toBe('perf-set');

    await p.close();
    expect(((await perfStream.ended) as ChannelError).reason).toBe('unavailable');
    const port = Number(p.address.slice(p.address.lastIndexOf(':') + 1));
    await eventually(async () => {
      const code = await new Promise<string>((resolve) => {
        const socket = netConnect({ host: '127.0.0.1', port });
        socket.once('connect', () => {
          socket.destroy();
          resolve('connected');
        });
        socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? ''));
      });
      expect(code).toBe('ECONNREFUSED');
    });

    // And a kind served again starts a listener again.
    const again = await cluster.serve({ kind: 'dr', tls: dr.serverTls, service: drFake });
    expect((await connect(again.address, dr.clientTls('dr-east')).ping('dr-east')).clusterId).toBe('dr-set');
  });
});
