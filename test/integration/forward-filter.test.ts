/**
 * Issue 17 item 1: a performance secondary's forwarded requests are held to its paths filter on
 * the primary. With the material the secondary holds after activation (its client certificate),
 * a direct gRPC `Forward` to a mount, auth method or namespace its filter denies, or to the
 * primary's local mount, answers 404 and changes nothing; so does the same through the
 * secondary's HTTP API. Every forwarded write leaves one audit line on the primary, with the
 * secondary's id and no value. A property test generates such attacks.
 */
import { Writable } from 'node:stream';
import { jest } from '@jest/globals';
import fc from 'fast-check';
import pino from 'pino';
import { clusterHostPort } from '../../src/core/cluster-addr.js';
import { connectPrimary } from '../../src/transport/grpc/index.js';
import type { PrimaryClient } from '../../src/replication/transport.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { inSync, PERF, replStatus } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

jest.setTimeout(90_000);

const KV2 = { type: 'kv', options: { version: '2' } };
const ID = 'perf-filtered';
const SECRET_VALUE = 'canary-value-7f3a';

interface Fixture {
  readonly p: TestNode;
  readonly s: TestNode;
  readonly lines: Record<string, unknown>[];
  readonly client: PrimaryClient;
}

/**
 * A primary with `secret/` (allowed), `eu/` and namespace `team-eu/` (with `kv/`) and auth method
 * `eu-users/` (denied), and a local mount `plocal/`; its secondary `ID` filtered by deny.
 */
async function setUp(): Promise<Fixture> {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const [p, s] = await Promise.all([startTestNode({ logger: pino({ level: 'info' }, sink) }), startTestNode()]);
  for (const [path, body] of [
    ['sys/mounts/secret', KV2],
    ['sys/mounts/eu', KV2],
    ['sys/mounts/plocal', { ...KV2, local: true }],
    ['sys/namespaces/team-eu', {}],
    ['team-eu/sys/mounts/kv', KV2],
    ['sys/auth/eu-users', { type: 'userpass' }],
    ['auth/eu-users/users/bob', { password: 'pw-bob' }],
    ['eu/data/existing', { data: { v: SECRET_VALUE } }],
    ['team-eu/kv/data/existing', { data: { v: SECRET_VALUE } }],
    ['plocal/data/existing', { data: { v: SECRET_VALUE } }],
  ] as const) {
    const r = await p.call('POST', path, body);
    expect({ path, ok: r.status < 300 }).toEqual({ path, ok: true });
  }
  await joinSecondary(p, s, ID, 'performance');
  expect((await p.call('POST', `${PERF}/primary/paths-filter/${ID}`, { mode: 'deny', paths: ['eu', 'team-eu', 'auth/eu-users'] })).status).toBe(204);
  await inSync(p, s, { kind: 'performance' });
  await eventually(async () => expect((await s.call('GET', 'sys/mounts')).body.data['eu/']).toBeUndefined());
  const m = s.node.performance.material.secondary!;
  const client = connectPrimary({ address: clusterHostPort((await replStatus(p, 'performance')).primary_cluster_addr) ?? '', tls: { caPem: m.caPem, certPem: m.certPem, keyPem: m.keyPem, serverName: m.serverName } });
  return { p, s, lines, client };
}

async function tearDown(f: Fixture | undefined): Promise<void> {
  if (!f) return;
  f.client.close();
  await Promise.all([f.p.stop(), f.s.stop()]);
}

interface Attack {
  readonly method: string;
  readonly operation: 'create' | 'update' | 'patch' | 'delete';
  readonly namespace: string;
  readonly path: string;
  readonly body: Record<string, unknown>;
}

const forward = (client: PrimaryClient, a: Attack) =>
  client.forward(ID, { requestId: 'attack', method: a.method, operation: a.operation, namespace: a.namespace, path: a.path, trailingSlash: false, query: {}, body: a.body });

/** What the primary holds of everything the attacks aim at: unchanged means nothing was written. */
async function primaryState(p: TestNode): Promise<unknown> {
  return {
    index: p.node.engine.lastGuard().index,
    mounts: Object.keys((await p.call('GET', 'sys/mounts')).body.data).sort(),
    auth: Object.keys((await p.call('GET', 'sys/auth')).body.data).sort(),
    ns: (await p.call('GET', 'sys/namespaces/team-eu')).body.data,
    eu: (await p.call('GET', 'eu/data/existing')).body.data.data,
    teamEu: (await p.call('GET', 'team-eu/kv/data/existing')).body.data.data,
  };
}

const upd = (path: string, body: Record<string, unknown> = {}, namespace = ''): Attack => ({ method: 'POST', operation: 'update', namespace, path, body });
const del = (path: string, namespace = ''): Attack => ({ method: 'DELETE', operation: 'delete', namespace, path, body: {} });

describe('forwarded requests and the secondary\'s paths filter', () => {
  let f: Fixture | undefined;
  beforeEach(async () => {
    f = await setUp();
  });
  afterEach(async () => {
    await tearDown(f);
    f = undefined;
  });

  test('a direct Forward with the secondary\'s certificate to what its filter denies answers 404, changes nothing, and is audited', async () => {
    const { p, client, lines } = f!;
    const before = await primaryState(p);
    const attacks: Attack[] = [
      upd('eu/data/existing', { data: { v: 'overwritten' } }),
      upd('eu/data/new', { data: { v: 'planted' } }),
      { method: 'PATCH', operation: 'patch', namespace: '', path: 'eu/data/existing', body: { data: { w: 1 } } },
      del('eu/data/existing'),
      del('eu/metadata/existing'),
      del('sys/mounts/eu'),
      upd('sys/mounts/eu/tune', { description: 'owned' }),
      upd('sys/mounts/eu', KV2),
      upd('kv/data/existing', { data: { v: 'x' } }, 'team-eu/'),
      upd('team-eu/kv/data/existing', { data: { v: 'x' } }),
      upd('sys/mounts/other', KV2, 'team-eu/'),
      upd('sys/policies/acl/mallory', { policy: 'path "*" { capabilities = ["sudo"] }' }, 'team-eu/'),
      del('sys/namespaces/team-eu'),
      upd('sys/namespaces/team-eu', { custom_metadata: { owner: 'mallory' } }),
      upd('sys/namespaces/team-eu/child'),
      del('sys/auth/eu-users'),
      upd('auth/eu-users/users/bob', { password: 'mallory' }),
      del('auth/eu-users/users/bob'),
      upd('plocal/data/existing', { data: { v: 'x' } }),
      del('sys/mounts/plocal'),
    ];
    for (const a of attacks) {
      const r = await forward(client, a);
      expect({ ...a, kind: r.kind, status: r.status }).toEqual({ ...a, kind: 'error', status: 404 });
      expect(r.body.errors).toEqual([expect.any(String)]);
    }
    expect(await primaryState(p)).toEqual(before);
    // What the filter lets it hold is still forwarded.
    expect(await forward(client, upd('secret/data/allowed', { data: { v: SECRET_VALUE } }))).toMatchObject({ kind: 'envelope', status: 200 });
    expect((await p.call('GET', 'secret/data/allowed')).body.data.data).toEqual({ v: SECRET_VALUE });
    // One audit line per forwarded request, naming the secondary; never a value or a path's body.
    const audit = lines.filter((l) => l.audit === 'replication' && l.op === 'performance/forward');
    expect(audit).toHaveLength(attacks.length + 1);
    expect(audit.slice(0, -1).every((l) => l.secondary_id === ID && l.outcome === 'refused' && l.status === 404)).toBe(true);
    expect(audit.at(-1)).toMatchObject({ secondary_id: ID, outcome: 'ok', status: 200, operation: 'update' });
    expect(lines.some((l) => JSON.stringify(l).includes(SECRET_VALUE) || JSON.stringify(l).includes('mallory'))).toBe(false);
  });

  test('through the secondary\'s HTTP API, writes that forward to what its filter denies answer 404 and change nothing', async () => {
    const { p, s } = f!;
    const before = await primaryState(p);
    // None of these exist on the secondary, so it forwards each as a write of replicated data.
    for (const [path, body] of [
      ['sys/namespaces/team-eu', { custom_metadata: { owner: 'mallory' } }],
      ['sys/mounts/eu', KV2],
      ['sys/auth/eu-users', { type: 'userpass' }],
    ] as const) {
      const r = await s.call('POST', path, body);
      expect({ path, status: r.status, errors: r.body.errors }).toEqual({ path, status: 404, errors: [expect.any(String)] });
    }
    expect(await primaryState(p)).toEqual(before);
    // A write the filter allows still goes through the secondary.
    expect((await s.call('PUT', 'secret/data/through-s', { data: { v: 1 } })).status).toBe(200);
    expect((await p.call('GET', 'secret/data/through-s')).body.data.data).toEqual({ v: 1 });
  });

  test('property: any generated forward to a denied mount, auth method or namespace answers 404 and changes nothing', async () => {
    const { p, client } = f!;
    const before = await primaryState(p);
    const seg = fc.stringMatching(/^[a-z0-9_-]{1,10}$/);
    const rest = fc.array(seg, { minLength: 0, maxLength: 4 }).map((s) => s.join('/'));
    const under = (prefix: string) => rest.map((r) => (r === '' ? prefix : `${prefix}/${r}`));
    const target = fc.oneof(
      under('eu').map((path) => ({ namespace: '', path })),
      under('auth/eu-users').map((path) => ({ namespace: '', path })),
      under('plocal').map((path) => ({ namespace: '', path })),
      under('team-eu').map((path) => ({ namespace: '', path })),
      rest.filter((r) => r !== '').map((path) => ({ namespace: 'team-eu/', path })),
      // A namespace under the denied one, existing on the primary or not, is as absent.
      fc.tuple(seg, rest.filter((r) => r !== '')).map(([child, path]) => ({ namespace: `team-eu/${child}/`, path })),
      fc.constantFrom('sys/mounts/eu', 'sys/mounts/eu/tune', 'sys/auth/eu-users', 'sys/mounts/plocal', 'sys/namespaces/team-eu').map((path) => ({ namespace: '', path })),
      seg.map((child) => ({ namespace: '', path: `sys/namespaces/team-eu/${child}` })),
    );
    const ops: readonly (readonly [string, Attack['operation']])[] = [['POST', 'update'], ['PUT', 'create'], ['PATCH', 'patch'], ['DELETE', 'delete']];
    const operation = fc.constantFrom(...ops);
    const body = fc.dictionary(seg, fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(KV2.options)), { maxKeys: 4 });
    await fc.assert(
      fc.asyncProperty(target, operation, body, async (t, [method, op], b) => {
        const r = await forward(client, { method, operation: op, namespace: t.namespace, path: t.path, body: b });
        expect({ ...t, op, kind: r.kind, status: r.status }).toEqual({ ...t, op, kind: 'error', status: 404 });
      }),
      { numRuns: 150, seed: 17_001 },
    );
    expect(await primaryState(p)).toEqual(before);
  });
});
