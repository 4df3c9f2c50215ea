/**
 * DR operations that must not hurt a node or spend anything when refused (issue 6 items 5 and 6,
 * issue 7 items 2, 3, 4 and 7): revoked and expired activation tokens, malformed secondary ids
 * and keys, a token of another replication set, DR-secondary-only endpoints elsewhere, the 403 of
 * operation-token/delete, the warning of a blank update-primary, and mounts after disable.
 * In-process nodes over real gRPC/mTLS and real LevelDB.
 */
import { eventually } from '../harness/eventually.js';
import { DR, OP, drOperationToken as opToken, drStatus as status, inSync, secondaryToken } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const nodes: TestNode[] = [];
const start = async (): Promise<TestNode> => {
  const n = await startTestNode();
  nodes.push(n);
  return n;
};
afterAll(async () => {
  for (const n of nodes.reverse()) await n.stop();
});

/** A standalone node holding a KV v2 secret, to prove a refused activation left it alone. */
async function nodeWithData(): Promise<TestNode> {
  const c = await start();
  expect((await c.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
  expect((await c.call('PUT', 'secret/data/mine', { data: { keep: 'me' } })).status).toBe(200);
  return c;
}

async function untouched(c: TestNode): Promise<void> {
  expect((await status(c)).mode).toBe('disabled');
  expect((await c.call('GET', 'secret/data/mine')).body.data.data).toEqual({ keep: 'me' });
}

/** A sealed activation token for `id`, sealed to `c`'s fresh public key. */
async function sealedToken(p: TestNode, c: TestNode, id: string, ttl?: string): Promise<string> {
  const key = await c.call('POST', `${DR}/secondary/generate-public-key`, {});
  expect(key.status).toBe(200);
  const r = await p.call('POST', `${DR}/primary/secondary-token`, { id, secondary_public_key: key.body.data.secondary_public_key, ...(ttl ? { ttl } : {}) });
  expect(r.status).toBe(200);
  return r.body.data.token;
}

describe('DR safety', () => {
  let a: TestNode; // primary
  let s: TestNode; // a's secondary
  let sOp = '';

  beforeAll(async () => {
    a = await start();
    expect((await a.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await a.call('PUT', 'secret/data/replicated', { data: { v: 'from-a' } })).status).toBe(200);
    expect((await a.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
    s = await start();
    expect((await s.call('POST', `${DR}/secondary/enable`, { token: await secondaryToken(a, 's') })).status).toBe(204);
    await inSync(a, s, { streaming: true });
    sOp = await opToken(s, a.unsealKeys.slice(0, 2));
  }, 30_000);

  describe('activation tokens refused before the wipe: 400, data untouched', () => {
    test('a wrapped token revoked before use', async () => {
      const c = await nodeWithData();
      const jwt = await secondaryToken(a, 'revoked-wrapped');
      expect((await a.call('POST', `${DR}/primary/revoke-secondary`, { id: 'revoked-wrapped' })).status).toBe(204);
      const r = await c.call('POST', `${DR}/secondary/enable`, { token: jwt });
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatch(/refused the activation token/);
      await untouched(c);
    });

    test('a sealed token past its ttl', async () => {
      const c = await nodeWithData();
      const issuedAt = Date.now();
      const token = await sealedToken(a, c, 'expired-sealed', '1s');
      await eventually(async () => expect(Date.now()).toBeGreaterThan(issuedAt + 1500), { timeoutMs: 5_000, intervalMs: 100 });
      const r = await c.call('POST', `${DR}/secondary/enable`, { token });
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatch(/activation token for "expired-sealed" expired/);
      await untouched(c);
    });
  });

  test('a sealed token revoked at the primary is refused before the wipe; a fresh token then activates', async () => {
    const c = await nodeWithData();
    const token = await sealedToken(a, c, 'revoked-sealed');
    expect((await a.call('POST', `${DR}/primary/revoke-secondary`, { id: 'revoked-sealed' })).status).toBe(204);
    // Only the primary knows of the revocation: it is asked (a Ping with the bundle's credentials) before the wipe.
    const r = await c.call('POST', `${DR}/secondary/enable`, { token });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(/refused secondary "revoked-sealed": .*revoked.*nothing was wiped/);
    await untouched(c);
    const again = await sealedToken(a, c, 'revoked-sealed-retry');
    expect((await c.call('POST', `${DR}/secondary/enable`, { token: again })).status).toBe(204);
    const st = await inSync(a, c, { streaming: true });
    expect(st).toMatchObject({ mode: 'secondary', secondary_id: 'revoked-sealed-retry' });
    expect(st.last_error).toBeUndefined();
  }, 40_000);

  describe('secondary-token validates everything before registering the id', () => {
    const known = async () => (await status(a)).known_secondaries as string[];

    test.each([
      ['a name no certificate can carry', { id: 'not a name' }],
      ['a leading dash', { id: '-dash' }],
      ['a 5,000-character id', { id: 'x'.repeat(5000) }],
      ['a 129-character id', { id: 'y'.repeat(129) }],
      ['an invalid secondary_public_key', { id: 'bad-key', secondary_public_key: 'bm90IGEga2V5' }],
    ])('%s: 400, and the id is not registered', async (_name, body) => {
      const before = await known();
      const r = await a.call('POST', `${DR}/primary/secondary-token`, body);
      expect(r.status).toBe(400);
      expect(r.text.length).toBeLessThan(1000);
      expect(await known()).toEqual(before);
    });

    test('the id refused for its bad key is still free', async () => {
      expect((await a.call('POST', `${DR}/primary/secondary-token`, { id: 'bad-key', secondary_public_key: '!!' })).status).toBe(400);
      expect((await a.call('POST', `${DR}/primary/secondary-token`, { id: 'bad-key' })).status).toBe(200);
      expect((await a.call('POST', `${DR}/primary/secondary-token`, { id: 'y'.repeat(128) })).status).toBe(200);
    });
  });

  test('update-primary with a token of another replication set is refused without spending it', async () => {
    const b = await start();
    expect((await b.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
    const foreign = await secondaryToken(b, 'foreign');
    const before = await status(s);
    const r = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: sOp, token: foreign }, { token: null });
    expect(r.status).toBe(400);
    expect(r.body.errors[0]).toMatch(/another|belongs to replication set/);
    expect((await status(s)).cluster_id).toBe(before.cluster_id);
    // Not redeemed: the issuing primary still holds the wrapped bundle.
    expect((await b.call('POST', 'sys/wrapping/lookup', { token: foreign }, { token: null })).status).toBe(200);
  });

  test('operation-token/delete with an invalid token is 403, as every other DR operation token check', async () => {
    const r = await s.call('POST', `${DR}/secondary/operation-token/delete`, { dr_operation_token: 'hvs.notavalidtokenatall0000' }, { token: null });
    expect(r.status).toBe(403);
    expect(r.body.errors).toEqual(['invalid DR operation token']);
    // The real token is still valid.
    expect((await s.call('POST', `${DR}/secondary/merkle-check`, { dr_operation_token: sOp }, { token: null })).status).toBe(200);
  });

  describe('DR-secondary-only endpoints refuse elsewhere, naming the mode', () => {
    const secondaryOnly: [string, string, Record<string, unknown> | undefined][] = [
      ['POST', `${OP}/attempt`, {}],
      ['GET', `${OP}/attempt`, undefined],
      ['DELETE', `${OP}/attempt`, undefined],
      ['POST', `${OP}/update`, { key: 'abcd', nonce: 'n' }],
      ['POST', `${DR}/secondary/reindex`, { dr_operation_token: 'hvs.x' }],
      ['POST', `${DR}/secondary/merkle-check`, { dr_operation_token: 'hvs.x' }],
      ['POST', `${DR}/secondary/operation-token/delete`, { dr_operation_token: 'hvs.x' }],
    ];

    test.each(['primary', 'disabled'] as const)('on a %s node', async (mode) => {
      const n = mode === 'primary' ? a : await start();
      for (const [method, path, body] of secondaryOnly) {
        const r = await n.call(method, path, body, { token: null });
        expect({ method, path, status: r.status, errors: r.body?.errors }).toEqual({
          method,
          path,
          status: 400,
          errors: [`this node is not a DR secondary (dr mode: ${mode})`],
        });
      }
      // No attempt was started by the refused POST.
      expect((await status(n)).mode).toBe(mode);
      // The node's own maintenance endpoints stay.
      expect((await n.call('POST', 'sys/replication/reindex', {})).status).toBe(200);
      expect((await n.call('POST', 'sys/replication/merkle-check', {})).status).toBe(200);
    });
  });

  describe('the secondary leaves the set', () => {
    test('a blank update-primary token detaches with a warning naming what was forgotten', async () => {
      const st = await status(s);
      const r = await s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: sOp, token: '' }, { token: null });
      expect(r.status).toBe(200);
      expect(r.body.warnings[0]).toContain(`cluster address ${st.primary_cluster_addr}`);
      expect(r.body.warnings[0]).toContain(`replication set ${st.cluster_id}`);
      expect(await status(s)).toMatchObject({ mode: 'secondary', primary_cluster_addr: '' });
    });

    test('after secondary/disable the replicated KV mount is readable at once, without a restart', async () => {
      expect((await s.call('POST', `${DR}/secondary/disable`, { dr_operation_token: sOp }, { token: null })).status).toBe(204);
      expect((await status(s)).mode).toBe('disabled');
      const r = await s.call('GET', 'secret/data/replicated', undefined, { token: a.rootToken });
      expect(r.status).toBe(200);
      expect(r.body.data.data).toEqual({ v: 'from-a' });
    });
  });
});
