/**
 * Activation safety of both kinds (issue 17 items 7, 8 and 19): an activation token's ttl is
 * bounded; a token the primary would refuse is refused before the node wipes its data.
 * In-process nodes over real gRPC/mTLS and real LevelDB.
 */
import { KINDS } from '../../src/core/replication/index.js';
import { generateRoot } from '../harness/dr.js';
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
