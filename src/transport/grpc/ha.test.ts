/**
 * HA forwarding on the cluster port, knocked on as an attacker would: only a certificate of the
 * cluster's HA CA reaches `forward`; a DR secondary's certificate is refused there (under the HA
 * server name at the handshake, under its own kind's name by the HaForward handler), and an HA
 * certificate cannot make a replication call. The HA service is a registration of its own, not a
 * replication kind. Real gRPC with mTLS on 127.0.0.1.
 */
import { InvalidRequest } from '../../core/errors.js';
import type { LeaseDown, LeaseUp } from '../../core/ha/read-lease.js';
import type { HaHttpRequest, LeaseDuplex } from './ha.js';
import { ChannelError, connectHa, connectPrimary, createClusterServer, type ClusterServer } from './index.js';
import { FakePrimary, makePki, type Pki } from './testing/fixtures.js';

const DR_NAME = 'primary.dr-set.tessera';
const HA_NAME = 'ha.tessera.cluster';
const req: HaHttpRequest = { method: 'PUT', url: '/v1/secret/data/x', headers: { 'x-vault-token': 't' }, body: Buffer.from('{}'), remoteAddress: '10.0.0.9' };

let dr: Pki;
let ha: Pki;
let cluster: ClusterServer;
let drFake: FakePrimary;
let forwarded: HaHttpRequest[];
/** The read-lease streams the server accepted, and what each received. */
let leaseStreams: Array<{ stream: LeaseDuplex<LeaseUp, LeaseDown>; got: LeaseUp[] }>;
let address: string;
const closers: (() => void)[] = [];

beforeAll(async () => {
  [dr, ha] = await Promise.all([makePki(['dr-east'], 'dr-set', DR_NAME), makePki(['standby'], 'ha', HA_NAME)]);
});

beforeEach(async () => {
  cluster = createClusterServer({ address: '127.0.0.1:0', closeGraceMs: 300 });
  drFake = new FakePrimary();
  forwarded = [];
  leaseStreams = [];
  address = (await cluster.serve({ kind: 'dr', tls: dr.serverTls, service: drFake })).address;
  await cluster.serveHa({
    tls: ha.serverTls,
    handlers: {
      forward: async (r) => {
        forwarded.push(r);
        return { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"ok":true}') };
      },
      readLease: (stream) => {
        const entry = { stream, got: [] as LeaseUp[] };
        leaseStreams.push(entry);
        // An echo server: an ask is granted, an ack answered with the next push.
        stream.onMessage((m) => {
          entry.got.push(m);
          if (m.type === 'ask') stream.send({ type: 'grant', ask: m.ask, durationMs: 1000, seq: 7 });
          if (m.type === 'ack') stream.send({ type: 'revoke' });
        });
      },
    },
  });
});

afterEach(async () => {
  for (const c of closers.splice(0)) c();
  await cluster.close();
});

function haClient(tls: Pki['serverTls']) {
  const c = connectHa({ address, tls });
  closers.push(() => c.close());
  return c;
}

async function refused(p: Promise<unknown>): Promise<ChannelError> {
  const e = await p.then(
    () => new Error('expected a refusal'),
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ChannelError);
  return e as ChannelError;
}

test('a standby of the cluster relays a request and gets the reply as written', async () => {
  const reply = await haClient(ha.clientTls('standby')).forward(req, 5_000);
  expect(reply).toEqual({ status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"ok":true}') });
  expect(forwarded).toEqual([req]);
});

test("a DR secondary's certificate is refused under the HA server name: nothing is forwarded", async () => {
  const e = await refused(haClient({ ...dr.clientTls('dr-east'), caPem: ha.serverTls.caPem, serverName: HA_NAME }).forward(req, 3_000));
  expect(['not_sent', 'unavailable']).toContain(e.reason);
  expect(forwarded).toEqual([]);
});

test("a DR secondary's certificate admitted under its own kind cannot reach HaForward", async () => {
  const e = await refused(haClient(dr.clientTls('dr-east')).forward(req, 3_000));
  expect(e.reason).toBe('permission_denied');
  expect(forwarded).toEqual([]);
});

test('an HA certificate cannot make a replication call', async () => {
  const client = connectPrimary({ address, tls: ha.clientTls('standby'), defaultDeadlineMs: 3_000 });
  closers.push(() => client.close());
  const e = await refused(client.ping('standby'));
  expect(e.reason).toBe('permission_denied');
  expect(drFake.calls).toEqual([]);
});

/** What a client's read-lease stream received, and a wait for its `n`th message or its end. */
function inbox(stream: LeaseDuplex<LeaseDown, LeaseUp>): { got: LeaseDown[]; ended: Promise<string>; until(n: number): Promise<void> } {
  const got: LeaseDown[] = [];
  const waiters: Array<() => void> = [];
  stream.onMessage((m) => {
    got.push(m);
    for (const w of waiters.splice(0)) w();
  });
  const ended = new Promise<string>((resolve) => stream.onEnd(resolve));
  const until = async (n: number): Promise<void> => {
    while (got.length < n) await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), ended]);
  };
  return { got, ended, until };
}

test('a standby of the cluster holds a read-lease stream: asks, grants, pushes, acks and revokes cross it as sent', async () => {
  const stream = haClient(ha.clientTls('standby')).readLease();
  const box = inbox(stream);
  stream.send({ type: 'ask', ask: 3 });
  await box.until(1);
  leaseStreams[0]!.stream.send({ type: 'push', seq: 9_000_000_001 });
  await box.until(2);
  stream.send({ type: 'ack', seq: 9_000_000_001 });
  await box.until(3);
  expect(box.got).toEqual([
    { type: 'grant', ask: 3, durationMs: 1000, seq: 7 },
    { type: 'push', seq: 9_000_000_001 },
    { type: 'revoke' },
  ]);
  expect(leaseStreams[0]!.got).toEqual([
    { type: 'ask', ask: 3 },
    { type: 'ack', seq: 9_000_000_001 },
  ]);
  stream.close();
});

test("a DR secondary's certificate admitted under its own kind cannot open a read lease", async () => {
  const stream = haClient(dr.clientTls('dr-east')).readLease();
  const box = inbox(stream);
  stream.send({ type: 'ask', ask: 1 });
  expect(await box.ended).toMatch(/read lease|PERMISSION_DENIED/i);
  expect(box.got).toEqual([]);
  expect(leaseStreams).toEqual([]);
});

test('the HA service is its own registration: it alone keeps the port, and leaves without touching the kinds', async () => {
  await cluster.close();
  cluster = createClusterServer({ address: '127.0.0.1:0', closeGraceMs: 300 });
  const echo = { forward: async () => ({ status: 204, headers: {}, body: Buffer.alloc(0) }) };
  const alone = await cluster.serveHa({ tls: ha.serverTls, handlers: echo });
  address = alone.address;
  expect((await haClient(ha.clientTls('standby')).forward(req, 5_000)).status).toBe(204);
  // A kind joins the port HA opened; HA leaves and the kind keeps serving on the same address.
  const drServed = await cluster.serve({ kind: 'dr', tls: dr.serverTls, service: drFake });
  expect(drServed.address).toBe(address);
  await alone.close();
  const e = await refused(haClient(ha.clientTls('standby')).forward(req, 3_000));
  expect(['not_sent', 'unavailable']).toContain(e.reason);
  const client = connectPrimary({ address, tls: dr.clientTls('dr-east'), defaultDeadlineMs: 3_000 });
  closers.push(() => client.close());
  await expect(client.ping('dr-east')).resolves.toBeDefined();
});

test('the HA service and a kind cannot claim the same server name', async () => {
  await expect(cluster.serveHa({ tls: { ...ha.serverTls, serverName: DR_NAME }, handlers: { forward: async () => ({ status: 200, headers: {}, body: Buffer.alloc(0) }) } })).rejects.toBeInstanceOf(InvalidRequest);
  await expect(cluster.serve({ kind: 'performance', tls: { ...dr.serverTls, serverName: HA_NAME }, service: drFake })).rejects.toBeInstanceOf(InvalidRequest);
  // Neither refusal touched what was served.
  expect((await haClient(ha.clientTls('standby')).forward(req, 5_000)).status).toBe(200);
});
