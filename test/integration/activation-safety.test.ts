/**
 * Activation safety of both kinds (issue 17 items 7, 8 and 19): an activation token's ttl is
 * bounded; a token the primary would refuse is refused before the node wipes its data.
 * In-process nodes over real gRPC/mTLS and real LevelDB.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { KINDS } from '../../src/core/replication/index.js';
import { freePorts, generateRoot } from '../harness/dr.js';
import { eventually } from '../harness/eventually.js';
import { base, inSync, replStatus, secondaryToken, type Kind } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';


let p: TestNode;
beforeAll(async () => {
  p = await startTestNode();
  expect((await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
  expect((await p.call('PUT', 'secret/data/primary', { data: { owner: 'primary' } })).status).toBe(200);
  for (const kind of KINDS) expect((await p.call('POST', `${base(kind)}/primary/enable`, {})).status).toBe(204);
}, 30_000);

/** A standalone node holding a KV v2 secret, to prove a refused activation left it alone. */
async function nodeWithData(): Promise<TestNode> {
  const c = await startTestNode();
  expect((await c.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
  expect((await c.call('PUT', 'secret/data/mine', { data: { keep: 'me' } })).status).toBe(200);
  return c;
}

async function untouched(c: TestNode, kind: Kind): Promise<void> {
  expect((await replStatus(c, kind)).mode).toBe('disabled');
  const r = await c.call('GET', 'secret/data/mine');
  expect(r.status).toBe(200);
  expect(r.body.data.data).toEqual({ keep: 'me' });
}

/**
 * A real HTTP server standing in front of a primary's API, for the redeem's `primary_api_addr`:
 * `answer` decides each request (a status to answer itself, or undefined to relay it to `target`,
 * awaiting `beforeRelayedReply` before the relayed reply goes back, or `{ afterRelay }`: relay it,
 * then answer that status instead of the reply, as a relay that lost the answer would);
 * `seen` holds the status of every reply sent, and `onReply` hears each one.
 */
async function frontOf(
  target: string,
  answer: () => number | { afterRelay: number } | undefined,
  beforeRelayedReply: () => Promise<void> = async () => undefined,
): Promise<{ addr: string; seen: number[]; onReply: (f: (status: number) => void) => void; close(): Promise<void> }> {
  const seen: number[] = [];
  const listeners: ((status: number) => void)[] = [];
  const replied = (status: number): void => {
    seen.push(status);
    for (const f of listeners) f(status);
  };
  const server: Server = createServer((req, res) => {
    const own = answer();
    const answerOwn = (status: number): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: [`answered ${status} by the test's front`] }));
      replied(status);
    };
    if (typeof own === 'number') return answerOwn(own);
    const out = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (up: IncomingMessage) => {
      if (own !== undefined) {
        up.resume();
        up.on('end', () => answerOwn(own.afterRelay));
        return;
      }
      void beforeRelayedReply().then(() => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        up.on('end', () => replied(up.statusCode ?? 502));
      });
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    addr: `http://127.0.0.1:${port}`,
    seen,
    onReply: (f) => listeners.push(f),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('a primary that cannot redeem the token for a moment', () => {
  test('a sealed primary (503) is asked again until it is unsealed, and the activation completes', async () => {
    // A fixed cluster port: the one the token names must answer again after the unseal.
    const [clusterPort] = await freePorts(1);
    const primary = await startTestNode({ clusterAddr: `127.0.0.1:${clusterPort}` });
    expect((await primary.call('POST', `${base('dr')}/primary/enable`, {})).status).toBe(204);
    const token = await secondaryToken(primary, 'through-a-seal', undefined, 'dr');
    expect((await primary.call('PUT', 'sys/seal')).status).toBe(204);
    const front = await frontOf(primary.apiAddr, () => undefined);
    // Unsealed once the secondary has been answered 503 at least once: the redeem saw the outage.
    const first503 = new Promise<void>((resolve) => front.onReply((status) => status === 503 && resolve()));
    const c = await nodeWithData();
    const enabling = c.call('POST', `${base('dr')}/secondary/enable`, { token, primary_api_addr: front.addr });
    await first503;
    for (const key of primary.unsealKeys.slice(0, 2)) expect((await primary.call('PUT', 'sys/unseal', { key })).status).toBe(200);
    const r = await enabling;
    expect([r.status, r.body]).toEqual([204, null]);
    expect(front.seen.filter((st) => st === 503).length).toBeGreaterThanOrEqual(1);
    expect(front.seen.at(-1)).toBe(200);
    await inSync(primary, c, { kind: 'dr' });
    expect((await replStatus(c, 'dr')).mode).toBe('secondary');
    await front.close();
    await Promise.all([c.stop(), primary.stop()]);
  }, 60_000);

  test('the primary\'s cluster port dead for a moment after the redeem: the confirmation asks again, and the spent token still activates', async () => {
    const [clusterPort] = await freePorts(1);
    const primary = await startTestNode({ clusterAddr: `127.0.0.1:${clusterPort}` });
    expect((await primary.call('POST', `${base('dr')}/primary/enable`, {})).status).toBe(204);
    const token = await secondaryToken(primary, 'through-a-dead-port', undefined, 'dr');
    // Once the primary has redeemed the token, and before the secondary hears so: the primary is
    // sealed (its cluster listener stops) and a stand-in on its cluster port drops every connection.
    let dropped!: () => void;
    const firstDrop = new Promise<void>((resolve) => (dropped = resolve));
    const deadPort = createNetServer((socket) => {
      socket.destroy();
      dropped();
    });
    const front = await frontOf(primary.apiAddr, () => undefined, async () => {
      expect((await primary.call('PUT', 'sys/seal')).status).toBe(204);
      await eventually(() => new Promise<void>((resolve, reject) => {
        deadPort.once('error', reject);
        deadPort.listen(clusterPort, '127.0.0.1', () => resolve());
      }), { timeoutMs: 10_000, intervalMs: 50 });
    });
    const c = await nodeWithData();
    try {
      const enabling = c.call('POST', `${base('dr')}/secondary/enable`, { token, primary_api_addr: front.addr });
      await firstDrop;
      await new Promise<void>((resolve) => deadPort.close(() => resolve()));
      for (const key of primary.unsealKeys.slice(0, 2)) expect((await primary.call('PUT', 'sys/unseal', { key })).status).toBe(200);
      const r = await enabling;
      expect([r.status, r.body]).toEqual([204, null]);
      await inSync(primary, c, { kind: 'dr' });
    } finally {
      await front.close();
      await Promise.all([c.stop(), primary.stop()]);
    }
  }, 60_000);

  test('a 503 whose redeem had gone through after all: the retry\'s refusal says the token may be spent', async () => {
    // The first unwrap reaches the primary and spends the token, but the front answers 503 (an
    // outcome lost on the way); the redeem asks again and the primary refuses the spent token.
    let n = 0;
    const front = await frontOf(p.apiAddr, () => (n++ === 0 ? { afterRelay: 503 } : undefined));
    const c = await nodeWithData();
    try {
      const token = await secondaryToken(p, 'lost-answer', undefined, 'dr');
      const r = await c.call('POST', `${base('dr')}/secondary/enable`, { token, primary_api_addr: front.addr });
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatch(/the primary refused the activation token: .*wrapping token is not valid.*\(an earlier attempt was answered 503: if the primary applied it after all, the token is spent; ask the primary for a new one\)/);
      expect(front.seen).toEqual([503, 400]);
      await untouched(c, 'dr');
    } finally {
      await front.close();
      await c.stop();
    }
  }, 60_000);

  test('a primary answering 500 is unavailable, not refusing: 503 at once, data untouched, the token still good', async () => {
    const front = await frontOf(p.apiAddr, () => 500);
    const c = await nodeWithData();
    const token = await secondaryToken(p, 'past-a-500', undefined, 'dr');
    const r = await c.call('POST', `${base('dr')}/secondary/enable`, { token, primary_api_addr: front.addr });
    expect(r.status).toBe(503);
    expect(r.body.errors[0]).toMatch(/could not redeem the activation token \(HTTP 500: answered 500 by the test's front\); nothing was changed here/);
    expect(r.body.errors[0]).not.toMatch(/refused/);
    // A 500 is not asked again: it says something broke there, which waiting does not mend.
    expect(front.seen).toEqual([500]);
    await untouched(c, 'dr');
    // The token was never redeemed, so it still activates, at the primary itself.
    expect((await c.call('POST', `${base('dr')}/secondary/enable`, { token })).status).toBe(204);
    await front.close();
    await c.stop();
  }, 60_000);
});

describe.each(KINDS)('%s', (kind) => {
  test('the root token that enabled the secondary does not survive a successful activation', async () => {
    const s = await startTestNode();
    const enabler = s.rootToken;
    expect((await s.call('POST', `${base(kind)}/secondary/enable`, { token: await secondaryToken(p, `enabled-${kind}`, undefined, kind) })).status).toBe(204);
    await inSync(p, s, { kind });
    expect((await replStatus(s, kind)).mode).toBe('secondary');
    // DR: a DR secondary serves no tokens at all. Performance: the token is unknown there, so the
    // secondary's former operator has no root over the primary's replicated secrets.
    const self = await s.call('GET', 'auth/token/lookup-self', undefined, { token: enabler });
    expect(self.status).toBe(kind === 'dr' ? 400 : 403);
    expect(self.body.errors.length).toBeGreaterThan(0);
    expect((await s.call('GET', 'secret/data/primary', undefined, { token: enabler })).status).toBe(kind === 'dr' ? 400 : 403);
    if (kind === 'performance') {
      // Root there takes the primary's key holders.
      const root = await generateRoot(s.apiAddr, p.unsealKeys);
      const r = await s.call('GET', 'secret/data/primary', undefined, { token: root });
      expect(r.status).toBe(200);
      expect(r.body.data.data).toEqual({ owner: 'primary' });
    }
    await s.stop();
  }, 40_000);

  test('a sealed activation token revoked at the primary is refused before the wipe: 400 saying why, data untouched, token not spent', async () => {
    const c = await nodeWithData();
    const key = await c.call('POST', `${base(kind)}/secondary/generate-public-key`, {});
    expect(key.status).toBe(200);
    const id = `revoked-sealed-${kind}`;
    const issued = await p.call('POST', `${base(kind)}/primary/secondary-token`, { id, secondary_public_key: key.body.data.secondary_public_key });
    expect(issued.status).toBe(200);
    expect((await p.call('POST', `${base(kind)}/primary/revoke-secondary`, { id })).status).toBe(204);
    const r = await c.call('POST', `${base(kind)}/secondary/enable`, { token: issued.body.data.token });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(new RegExp(`refused secondary "${id}": .*revoked.*; nothing was wiped`));
    await untouched(c, kind);
    // Nothing was spent either: the node's key pair is still there, so a fresh sealed token for it activates.
    const fresh = await p.call('POST', `${base(kind)}/primary/secondary-token`, { id: `${id}-fresh`, secondary_public_key: key.body.data.secondary_public_key });
    expect((await c.call('POST', `${base(kind)}/secondary/enable`, { token: fresh.body.data.token })).status).toBe(204);
    await c.stop();
  }, 40_000);

  test('an activation token ttl past 768h is a 400 naming the bound, and the id is not registered', async () => {
    const known = async (): Promise<string[]> => (await replStatus(p, kind)).known_secondaries;
    const before = await known();
    for (const ttl of ['100000h', '769h', 768 * 3600 + 1]) {
      const r = await p.call('POST', `${base(kind)}/primary/secondary-token`, { id: `long-${kind}`, ttl });
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatch(/is longer than the 768h0m0s an activation token may live/);
    }
    expect(await known()).toEqual(before);
    // The bound itself is accepted, under the same id (nothing was registered before).
    const ok = await p.call('POST', `${base(kind)}/primary/secondary-token`, { id: `long-${kind}`, ttl: '768h' });
    expect(ok.status).toBe(200);
    expect(await known()).toEqual([...before, `long-${kind}`].sort());
  });
});
