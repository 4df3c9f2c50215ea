/**
 * sys/replication/events on in-process nodes with real gRPC: a DR primary enabled, a secondary
 * activated, the primary demoted and the secondary promoted, each step arriving on both nodes'
 * server-sent event streams in order, with the right types and no token in any byte; the JSON
 * history; replay from Last-Event-ID; and the refusals (no sudo, a namespace) in Vault's shape.
 */
import { eventually } from '../harness/eventually.js';
import { DR, drOperationToken, inSync, secondaryToken } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { openSse, type SseClient, type SseFrame } from '../support/sse.js';

const nodes: TestNode[] = [];
const streams: SseClient[] = [];
async function node(): Promise<TestNode> {
  const n = await startTestNode();
  nodes.push(n);
  return n;
}
async function sse(n: TestNode, headers: Record<string, string> = {}, query = ''): Promise<SseClient> {
  const s = await openSse(`${n.apiAddr}/v1/sys/replication/events${query}`, n.rootToken, headers);
  streams.push(s);
  return s;
}
afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

/** `kind:type[:outcome]` of each frame, in arrival order. */
const names = (frames: readonly SseFrame[]): string[] => frames.map((f) => `${f.data.kind}:${f.data.type}${f.data.outcome ? `:${f.data.outcome}` : ''}`);

/** Index of each wanted name in `got`, each after the previous; -1 where one is missing or out of order. */
function inOrder(got: readonly string[], wanted: readonly string[]): number[] {
  let from = 0;
  return wanted.map((w) => {
    const at = got.indexOf(w, from);
    if (at === -1) return -1;
    from = at + 1;
    return at;
  });
}

const has = (want: readonly string[]) => (frames: readonly SseFrame[]): boolean => !inOrder(names(frames), want).includes(-1);

it('streams enable, activation, demote and promote on both nodes, in order, without a token', async () => {
  const p = await node();
  const s = await node();
  const onP = await sse(p);
  const onS = await sse(s);
  expect(onP.status).toBe(200);
  expect(onP.contentType).toMatch(/^text\/event-stream/);

  expect((await p.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
  const activation = await secondaryToken(p, 'east');
  expect((await s.call('POST', `${DR}/secondary/enable`, { token: activation })).status).toBe(204);
  await inSync(p, s, { streaming: true });

  const primarySide = [
    'dr:mode-changed', 'dr:primary/enable:ok', 'dr:primary/secondary-token:ok', 'dr:secondary-activated', 'dr:secondary-connected',
  ];
  await onP.waitFor(has(primarySide));
  await onS.waitFor(has(['dr:mode-changed', 'dr:secondary/enable:ok', 'dr:connected']));
  const enabled = onP.frames.find((f) => f.data.type === 'mode-changed');
  expect(enabled?.data).toMatchObject({ from: 'disabled', to: 'primary', cause: 'enablePrimary' });
  expect(onP.frames.find((f) => f.data.type === 'primary/secondary-token')?.data).toMatchObject({ secondary_id: 'east', issued: true });
  expect(onS.frames.filter((f) => f.data.type === 'mode-changed').map((f) => `${f.data.from}->${f.data.to}`)).toEqual(
    expect.arrayContaining(['disabled->bootstrapping', 'bootstrapping->secondary']),
  );

  // Failover: the primary demotes, the secondary is promoted with a DR operation token.
  expect((await p.call('POST', `${DR}/primary/demote`, {})).status).toBe(200);
  await onP.waitFor(has([...primarySide, 'dr:mode-changed', 'dr:primary/demote:ok']));
  expect(onP.frames.filter((f) => f.data.type === 'mode-changed').at(-1)?.data).toMatchObject({ from: 'primary', to: 'secondary', cause: 'demote' });
  await onS.waitFor(has(['dr:connected', 'dr:disconnected']));

  const opToken = await drOperationToken(s, p.unsealKeys.slice(0, 2));
  expect((await s.call('POST', `${DR}/secondary/promote`, { dr_operation_token: opToken })).status).toBe(204);
  await onS.waitFor(has(['dr:secondary/enable:ok', 'dr:connected', 'dr:disconnected', 'dr:operation-token/use:ok', 'dr:mode-changed', 'dr:secondary/promote:ok']));
  expect(onS.frames.filter((f) => f.data.type === 'mode-changed').at(-1)?.data).toMatchObject({ from: 'secondary', to: 'primary', cause: 'promote' });

  // Ids grow by one per event on each node; every event has an RFC 3339 time and its kind.
  for (const st of [onP, onS]) {
    const ids = st.frames.map((f) => Number(f.id));
    expect(ids).toEqual(ids.map((_, i) => ids[0]! + i));
    expect(st.frames.map((f) => f.data.id)).toEqual(ids);
    for (const f of st.frames) expect(new Date(f.data.time).toISOString()).toBe(f.data.time);
  }

  // No credential in any byte either stream carried.
  const secrets = [activation, ...activation.split('.'), opToken, p.rootToken, s.rootToken, ...p.unsealKeys].filter((x) => x.length >= 16);
  for (const st of [onP, onS]) for (const secret of secrets) expect(st.raw()).not.toContain(secret);

  // The JSON history holds the same events.
  const json = await p.call('GET', 'sys/replication/events?format=json');
  expect(json.status).toBe(200);
  expect(json.body.data.events.map((e: { id: number }) => e.id)).toEqual(onP.frames.map((f) => f.data.id));
  expect(json.body.data.capacity).toBe(500);
});

it('replays from Last-Event-ID (or ?after=), then streams live, and the client may leave at any time', async () => {
  const p = await node();
  await p.call('POST', `${DR}/primary/enable`, {});
  await secondaryToken(p, 'a');
  await secondaryToken(p, 'b');
  const all = (await p.call('GET', 'sys/replication/events?format=json')).body.data.events as { id: number; type: string }[];
  expect(all.length).toBeGreaterThanOrEqual(4);
  const from = all[1]!.id;

  const resumed = await sse(p, { 'Last-Event-ID': String(from) });
  await resumed.waitFor((f) => f.length === all.length - 2);
  expect(resumed.frames.map((f) => f.data.id)).toEqual(all.slice(2).map((e) => e.id));
  const after = await sse(p, {}, `?after=${all.at(-1)!.id}`);
  // Live: an event after connecting arrives.
  await p.call('POST', `${DR}/primary/revoke-secondary`, { id: 'a' });
  await after.waitFor(has(['dr:primary/revoke-secondary:ok']));
  expect(after.frames[0]?.data.id).toBe(all.at(-1)!.id + 1);
  expect(after.frames.find((f) => f.data.type === 'primary/revoke-secondary')?.data.secondary_id).toBe('a');

  // A client that leaves is let go (its subscription ends), and new clients still stream.
  expect(p.node.events.subscriberCount).toBe(2);
  resumed.close();
  after.close();
  await eventually(() => expect(p.node.events.subscriberCount).toBe(0));
  const again = await sse(p, { 'Last-Event-ID': String(all.at(-1)!.id) });
  await again.waitFor(has(['dr:primary/revoke-secondary:ok']));
});

it('ends open streams when the node seals (their tokens can no longer be checked)', async () => {
  const p = await node();
  const open = await sse(p);
  expect(open.status).toBe(200);
  await eventually(() => expect(p.node.events.subscriberCount).toBe(1));
  expect((await p.call('PUT', 'sys/seal', {})).status).toBe(204);
  await eventually(() => expect(open.ended()).toBe(true));
  expect(p.node.events.subscriberCount).toBe(0);
  // Sealed, the endpoint refuses like every token route.
  expect((await p.call('GET', 'sys/replication/events?format=json')).status).toBe(503);
});

it('refuses a token without sudo, a namespace, and a malformed Last-Event-ID, in Vault\'s error shape', async () => {
  const p = await node();
  expect((await p.call('PUT', 'sys/policies/acl/events-read', { policy: 'path "sys/replication/events" { capabilities = ["read"] }' })).status).toBe(204);
  const created = await p.call('POST', 'auth/token/create', { policies: ['events-read'] });
  const reader = created.body.auth.client_token as string;

  const noSudo = await p.call('GET', 'sys/replication/events?format=json', undefined, { token: reader });
  expect(noSudo.status).toBe(403);
  expect(noSudo.body).toEqual({ errors: ['permission denied'] });
  const noSudoStream = await openSse(`${p.apiAddr}/v1/sys/replication/events`, reader);
  expect(noSudoStream.status).toBe(403);
  expect(noSudoStream.contentType).toMatch(/^application\/json/);
  noSudoStream.close();
  const none = await p.call('GET', 'sys/replication/events', undefined, { token: null });
  expect(none.status).toBe(403);

  expect((await p.call('POST', 'sys/namespaces/team', {})).status).toBe(200);
  const byHeader = await p.call('GET', 'sys/replication/events?format=json', undefined, { headers: { 'X-Vault-Namespace': 'team' } });
  expect(byHeader.status).toBe(400);
  expect(byHeader.body.errors[0]).toMatch(/restricted to the root namespace/);
  const byPrefix = await p.call('GET', 'team/sys/replication/events?format=json');
  expect(byPrefix.status).toBe(400);
  expect(byPrefix.body.errors[0]).toMatch(/restricted to the root namespace/);

  const bad = await openSse(`${p.apiAddr}/v1/sys/replication/events`, p.rootToken, { 'Last-Event-ID': 'yesterday' });
  expect(bad.status).toBe(400);
  bad.close();
  const badFormat = await p.call('GET', 'sys/replication/events?format=xml');
  expect(badFormat.status).toBe(400);
  expect(Array.isArray(badFormat.body.errors)).toBe(true);
});
