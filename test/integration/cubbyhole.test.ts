/**
 * Issue 27 item 4: cubbyhole, as Vault's builtin/logical/cubbyhole. Mounted at `cubbyhole/` in
 * every namespace (type cubbyhole, local), never disabled; each service token's own storage, which
 * no other token (root included) reads; a batch token refused with Vault's text; gone with the
 * token, whichever way it is revoked (its children's too) or when it expires. Response wrapping
 * keeps working beside it.
 */
import { eventually } from '../harness/eventually.js';
import { hashToken } from '../../src/vault/token-keys.js';
import { cubbyholeKey } from '../../src/vault/cubbyhole.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
}, 30_000);
afterAll(async () => n.stop());

const child = async (body: Record<string, unknown> = {}, token?: string): Promise<string> => {
  const r = await n.call('POST', 'auth/token/create', { policies: ['default'], ...body }, token ? { token } : {});
  expect(r.status).toBe(200);
  return r.body.auth.client_token as string;
};
const stored = async (token: string): Promise<boolean> => (await n.node.core.store().get(cubbyholeKey(hashToken(token)))) !== undefined;

describe('the cubbyhole mount', () => {
  it('is listed in sys/mounts, local, type cubbyhole', async () => {
    const r = await n.call('GET', 'sys/mounts');
    expect(r.body.data['cubbyhole/']).toMatchObject({ type: 'cubbyhole', local: true, description: 'per-token private secret storage', accessor: expect.stringMatching(/^cubbyhole_/) });
    expect((await n.call('GET', 'sys/mounts/cubbyhole')).body.data).toMatchObject({ type: 'cubbyhole' });
  });

  it('cannot be disabled, nor another engine mounted there', async () => {
    expect(await n.call('DELETE', 'sys/mounts/cubbyhole')).toMatchObject({ status: 400, body: { errors: ['cannot unmount "cubbyhole/"'] } });
    expect(await n.call('DELETE', 'sys/mounts/cubbyhole/')).toMatchObject({ status: 400 });
    expect((await n.call('POST', 'sys/mounts/cubbyhole', { type: 'kv' })).status).toBe(400);
    expect((await n.call('GET', 'sys/mounts')).body.data['cubbyhole/'].type).toBe('cubbyhole');
  });
});

describe('a token\'s cubbyhole', () => {
  it('writes, reads, lists and deletes for its token (default policy)', async () => {
    const t = await child();
    expect((await n.call('POST', 'cubbyhole/app/one', { v: '1' }, { token: t })).status).toBe(204);
    expect((await n.call('PUT', 'cubbyhole/app/deep/two', { v: '2' }, { token: t })).status).toBe(204);
    expect((await n.call('POST', 'cubbyhole/top', { v: 't' }, { token: t })).status).toBe(204);
    expect((await n.call('GET', 'cubbyhole/app/one', undefined, { token: t })).body.data).toEqual({ v: '1' });
    expect((await n.call('LIST', 'cubbyhole/app', undefined, { token: t })).body.data.keys).toEqual(['deep/', 'one']);
    expect((await n.call('GET', 'cubbyhole?list=true', undefined, { token: t })).body.data.keys).toEqual(['app/', 'top']);
    expect((await n.call('DELETE', 'cubbyhole/app/one', undefined, { token: t })).status).toBe(204);
    expect(await n.call('GET', 'cubbyhole/app/one', undefined, { token: t })).toMatchObject({ status: 404, body: { errors: [] } });
    expect((await n.call('LIST', 'cubbyhole/nothing', undefined, { token: t })).status).toBe(404);
  });

  it('is invisible to every other token, root included, and theirs to it', async () => {
    const a = await child();
    const b = await child();
    await n.call('POST', 'cubbyhole/secret', { who: 'a' }, { token: a });
    await n.call('POST', 'cubbyhole/secret', { who: 'root' });
    expect((await n.call('GET', 'cubbyhole/secret', undefined, { token: a })).body.data).toEqual({ who: 'a' });
    expect((await n.call('GET', 'cubbyhole/secret')).body.data).toEqual({ who: 'root' });
    expect((await n.call('GET', 'cubbyhole/secret', undefined, { token: b })).status).toBe(404);
    expect((await n.call('LIST', 'cubbyhole', undefined, { token: b })).status).toBe(404);
  });

  it('refuses bad input and a batch token with Vault\'s 400, writing nothing', async () => {
    const t = await child();
    expect(await n.call('POST', 'cubbyhole/empty', {}, { token: t })).toMatchObject({ status: 400, body: { errors: ['missing data fields'] } });
    expect(await stored(t)).toBe(false);
    const batch = (await n.call('POST', 'auth/token/create', { type: 'batch', policies: ['default'] })).body.auth.client_token as string;
    expect(await n.call('POST', 'cubbyhole/x', { v: 1 }, { token: batch })).toMatchObject({ status: 400, body: { errors: ['cubbyhole operations are only supported by "service" type tokens'] } });
    expect((await n.call('GET', 'cubbyhole/x', undefined, { token: batch })).status).toBe(400);
  });

  it('lives in the token\'s own (local) storage class', async () => {
    const t = await child();
    await n.call('POST', 'cubbyhole/k', { v: 1 }, { token: t });
    expect(cubbyholeKey(hashToken(t)).startsWith('local/')).toBe(true);
    expect(await stored(t)).toBe(true);
  });

  it('is per namespace', async () => {
    expect((await n.call('POST', 'sys/namespaces/cns')).status).toBe(200);
    const ns = { headers: { 'X-Vault-Namespace': 'cns' } };
    expect((await n.call('GET', 'sys/mounts', undefined, ns)).body.data['cubbyhole/']).toMatchObject({ type: 'cubbyhole' });
    await n.call('POST', 'cubbyhole/where', { v: 'ns' }, ns);
    await n.call('POST', 'cubbyhole/where', { v: 'root' });
    expect((await n.call('GET', 'cubbyhole/where', undefined, ns)).body.data).toEqual({ v: 'ns' });
    expect((await n.call('GET', 'cns/cubbyhole/where')).body.data).toEqual({ v: 'ns' });
    expect((await n.call('GET', 'cubbyhole/where')).body.data).toEqual({ v: 'root' });
  });
});

describe('a cubbyhole goes with its token', () => {
  it('revoke, revoke-self, revoke-accessor, revoke-orphan, and a parent\'s revocation take it', async () => {
    const ways: Array<(t: string, accessor: string) => Promise<unknown>> = [
      (t) => n.call('POST', 'auth/token/revoke', { token: t }),
      (t) => n.call('POST', 'auth/token/revoke-self', {}, { token: t }),
      (_t, accessor) => n.call('POST', 'auth/token/revoke-accessor', { accessor }),
      (t) => n.call('POST', 'auth/token/revoke-orphan', { token: t }),
    ];
    for (const revoke of ways) {
      const r = await n.call('POST', 'auth/token/create', { policies: ['default'] });
      const t = r.body.auth.client_token as string;
      await n.call('POST', 'cubbyhole/k', { v: 1 }, { token: t });
      expect(await stored(t)).toBe(true);
      await revoke(t, r.body.auth.accessor as string);
      expect(await stored(t)).toBe(false);
    }
    const parent = await child({ policies: ['root'] });
    const kid = await child({}, parent);
    await n.call('POST', 'cubbyhole/k', { v: 1 }, { token: kid });
    await n.call('POST', 'auth/token/revoke', { token: parent });
    expect(await stored(kid)).toBe(false);
  });

  it('expiry takes it', async () => {
    const t = await child({ ttl: '2s' });
    await n.call('POST', 'cubbyhole/k', { v: 1 }, { token: t });
    expect(await stored(t)).toBe(true);
    await eventually(async () => expect((await n.call('GET', 'cubbyhole/k', undefined, { token: t })).status).toBe(403), { timeoutMs: 10_000 });
    await n.node.core.tokens.tidy();
    expect(await stored(t)).toBe(false);
  });
});

describe('response wrapping beside it', () => {
  it('wraps and unwraps as before', async () => {
    const w = await n.call('POST', 'sys/wrapping/wrap', { a: 'b' }, { headers: { 'X-Vault-Wrap-TTL': '60' } });
    const wt = w.body.wrap_info.token as string;
    expect((await n.call('POST', 'sys/wrapping/unwrap', {}, { token: wt })).body.data).toEqual({ a: 'b' });
  });
});
