/**
 * Issue 6 item 13: client mistakes answer 400 in Vault's {"errors":[...]} shape, never 500, and
 * change nothing: JSON bodies nested too deep, policies nested too deep or too large.
 */
import { MAX_JSON_DEPTH } from '../../src/http/request.js';
import { POLICY_LIMITS } from '../../src/vault/policy.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;

beforeAll(async () => {
  n = await startTestNode();
  expect((await n.call('POST', 'sys/mounts/kv1', { type: 'kv' })).status).toBe(204);
  expect((await n.call('POST', 'sys/mounts/kv2', { type: 'kv', options: { version: '2' } })).status).toBe(204);
}, 30_000);

afterAll(async () => {
  await n.stop();
});

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

function expect400(r: { status: number; body: any }, pattern: RegExp): void {
  expect(r.status).toBe(400);
  expect(r.body).toEqual({ errors: [expect.stringMatching(pattern)] });
}

describe('JSON nesting', () => {
  it('refuses a KV value nested 10,000 deep (20 KB) with a 400, writing nothing', async () => {
    const deep = nested(10_000);
    expect400(await n.call('PUT', 'kv2/data/deep', undefined, { raw: `{"data":{"v":${deep}}}` }), /nested deeper than 128 levels/);
    expect400(await n.call('PUT', 'kv1/deep', undefined, { raw: `{"v":${deep}}` }), /nested deeper than 128 levels/);
    expect((await n.call('GET', 'kv2/data/deep')).status).toBe(404);
    expect((await n.call('GET', 'kv1/deep')).status).toBe(404);
    // Brackets inside strings are data, not nesting.
    expect((await n.call('PUT', 'kv1/brackets', { v: nested(10_000) })).status).toBe(204);
    expect((await n.call('GET', 'kv1/brackets')).body.data.v).toBe(nested(10_000));
  });

  it('accepts values up to the bound and round-trips them', async () => {
    const ok = JSON.parse(nested(MAX_JSON_DEPTH - 2)) as unknown;
    expect((await n.call('PUT', 'kv2/data/ok', { data: { v: ok } })).status).toBe(200);
    expect((await n.call('GET', 'kv2/data/ok')).body.data.data.v).toEqual(ok);
    expect400(await n.call('PUT', 'kv2/data/over', undefined, { raw: `{"data":{"v":${nested(MAX_JSON_DEPTH - 1)}}}` }), /nested deeper/);
  });
});

describe('policy bounds', () => {
  const put = (name: string, policy: string) => n.call('PUT', `sys/policies/acl/${name}`, { policy });

  it('refuses 1,000 nested brackets with a 400, storing nothing', async () => {
    expect400(await put('deep', `path "a" { capabilities = ${nested(1000)} }`), /nested deeper than 16 levels/);
    expect400(await put('deepjson', `{"path": {"a": {"capabilities": ${nested(1000)}}}}`), /nested deeper than 16 levels/);
    expect((await n.call('GET', 'sys/policies/acl/deep')).status).toBe(404);
  });

  it('refuses 20,000 paths quickly with a 400, and more paths than the bound even when small', async () => {
    const paths = (count: number) => Array.from({ length: count }, (_, i) => `path "secret/data/app${i}/*" { capabilities = ["read", "list"] }`).join('\n');
    const started = Date.now();
    expect400(await put('huge', paths(20_000)), /bytes; at most 131072 are accepted/);
    expect(Date.now() - started).toBeLessThan(2_000);
    const small = Array.from({ length: POLICY_LIMITS.maxPaths + 1 }, (_, i) => `path "a${i}" {}`).join('\n');
    expect(Buffer.byteLength(small)).toBeLessThan(POLICY_LIMITS.maxBytes);
    expect400(await put('many', small), /1001 blocks; at most 1000 path blocks/);
    expect((await n.call('GET', 'sys/policies/acl/huge')).status).toBe(404);
    expect((await n.call('GET', 'sys/policies/acl/many')).status).toBe(404);
  });

  it('still accepts an ordinary policy with many paths', async () => {
    const text = Array.from({ length: 50 }, (_, i) => `path "secret/data/app${i}/*" {\n  capabilities = ["read", "list"]\n}`).join('\n');
    expect((await put('ordinary', text)).status).toBe(204);
    expect((await n.call('GET', 'sys/policies/acl/ordinary')).body.data.policy).toBe(text);
  });
});
