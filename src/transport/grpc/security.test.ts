/** mTLS on the replication channel: who gets refused, where, and how it looks to the client. */
import { createServer } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { PrimaryClient, ReplicationServer } from '../../replication/transport.js';
import { ChannelError, connectPrimary, serveReplication } from './index.js';
import { grpcCodeOf } from './status.js';
import { loadReplication, type RawClient } from './proto.js';
import { FakePrimary, SERVER_NAME, makePki, type Pki } from './testing/fixtures.js';
import type * as wire from './wire.js';

let pki: Pki;
let foreign: Pki;
let fake: FakePrimary;
let server: ReplicationServer;
const clients: PrimaryClient[] = [];

beforeAll(async () => {
  [pki, foreign] = await Promise.all([makePki(['s1', 'revoked']), makePki(['s1'], 'cluster-2')]);
});

beforeEach(async () => {
  fake = new FakePrimary();
  server = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service: fake });
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await server.close();
});

function connect(tls: Parameters<typeof connectPrimary>[0]['tls'], address = server.address): PrimaryClient {
  // Refusals answer at once; the deadline only bounds a loaded machine.
  const client = connectPrimary({ address, tls, defaultDeadlineMs: 10_000 });
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

describe('the handshake', () => {
  it('refuses a client without a certificate', async () => {
    const { Client } = loadReplication();
    const raw = new Client(server.address, grpc.credentials.createSsl(Buffer.from(pki.serverTls.caPem)), {
      'grpc.ssl_target_name_override': SERVER_NAME,
    }) as unknown as RawClient;
    const error = await new Promise<grpc.ServiceError | null>((resolve) => {
      raw.Ping({ secondaryId: 's1' }, { deadline: Date.now() + 2_000 }, (err: grpc.ServiceError | null, _res?: wire.PingResponse) => resolve(err));
    });
    raw.close();
    expect(error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(fake.calls).toEqual([]);
  });

  it('refuses a client certificate from another CA, even for ping', async () => {
    const tls = { ...foreign.clientTls('s1'), caPem: pki.serverTls.caPem };
    const e = await refusal(connect(tls).ping('s1', 2_000));
    expect(e.reason).toBe('unavailable');
    expect(fake.calls).toEqual([]);
    expect(fake.authorized).toEqual([]);
  });

  it('the client refuses a server whose certificate does not carry the pinned name', async () => {
    const e = await refusal(connect({ ...pki.clientTls('s1'), serverName: 'primary.somewhere-else' }).ping('s1', 2_000));
    expect(e.reason).toBe('unavailable');
    expect(fake.calls).toEqual([]);
  });

  it('the client refuses a server from another CA', async () => {
    const e = await refusal(connect({ ...pki.clientTls('s1'), caPem: foreign.serverTls.caPem }).ping('s1', 2_000));
    expect(e.reason).toBe('unavailable');
    expect(fake.calls).toEqual([]);
  });
});

describe('authorize', () => {
  it('a certificate whose id the service refuses gets permission_denied on every method, ping included', async () => {
    fake.refused.add('revoked');
    const client = connect(pki.clientTls('revoked'));
    const guard = { index: 1n, hash: Buffer.alloc(32) };
    const attempts: Promise<unknown>[] = [
      client.bootstrap({ secondaryId: 'revoked', version: '0.1.0', kind: 'dr', apiAddr: '', clusterAddr: '' }),
      client.heartbeat({ secondaryId: 'revoked', applied: guard, sentAtMs: 1, state: '', apiAddr: '', clusterAddr: '' }),
      client.openSnapshot('revoked'),
      client.closeSnapshot('x'),
      client.pageHashes('x', 1),
      client.subpageHashes('x', 1, 0),
      client.leaves('x', 1, 0, [1]),
      client.fetchValues('x', ['k']),
    ];
    for (const attempt of attempts) {
      const e = await refusal(attempt);
      expect([e.reason, grpcCodeOf(e), e.message]).toEqual(['permission_denied', grpc.status.PERMISSION_DENIED, 'secondary revoked is revoked']);
    }
    const streamError = await new Promise<Error | undefined>((resolve) => {
      client.streamWal({ secondaryId: 'revoked', guard, maxBatchEntries: 1 }, { onMessage: () => {}, onEnd: resolve });
    });
    expect((streamError as ChannelError).reason).toBe('permission_denied');
    expect(fake.methods()).toEqual([]);
    expect(fake.authorized[0]?.fingerprint).toBe(pki.leaves.get('revoked')?.fingerprint);

    // A revoked id cannot even probe (update-primary by address goes through Ping).
    const ping = await refusal(client.ping('revoked', 2_000));
    expect(ping.reason).toBe('permission_denied');
    expect(fake.methods()).toEqual([]);
    expect(fake.authorized.map((p) => p.secondaryId)).toEqual(Array(attempts.length + 2).fill('revoked'));
    expect([...fake.authorizedCalls].sort()).toEqual(['bootstrap', 'heartbeat', 'ping', ...Array(6).fill('reconcile'), 'stream']);
  });

  it('the secondary id comes from the certificate, not from the request', async () => {
    await connect(pki.clientTls('s1')).bootstrap({ secondaryId: 'revoked', version: '0.1.0', kind: 'dr', apiAddr: '', clusterAddr: '' });
    expect(fake.calls[0]?.peer?.secondaryId).toBe('s1');
  });
});

describe('probing', () => {
  it('ping to a closed port rejects within its deadline', async () => {
    const probe = createServer();
    const port = await new Promise<number>((resolve) => probe.listen(0, '127.0.0.1', () => resolve((probe.address() as { port: number }).port)));
    await new Promise((resolve) => probe.close(resolve));

    const client = connect(pki.clientTls('s1'), `127.0.0.1:${port}`);
    const started = Date.now();
    const e = await refusal(client.ping('s1', 800));
    expect(Date.now() - started).toBeLessThan(1_300);
    expect(['unavailable', 'deadline']).toContain(e.reason);
    expect(client.connectionState()).toMatch(/^(transient_failure|connecting|idle)$/);
  });
});
