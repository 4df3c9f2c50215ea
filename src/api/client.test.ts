import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ErrorCode } from '../core/index.js';
import { ApiError, ConnectionFailed, MalformedResponse } from './errors.js';
import { TesseraClient } from './client.js';
import { FakeVault, envelope } from './testing/fake-vault.js';

let fake: FakeVault;
let client: TesseraClient;

beforeEach(async () => {
  fake = await FakeVault.start();
  client = new TesseraClient({ addr: `${fake.addr}/`, token: 'hvs.root', namespace: 'team-a' });
});
afterEach(async () => {
  await fake.close();
});

describe('generic calls', () => {
  it('prefixes /v1/, sends the token and namespace headers, and returns the envelope', async () => {
    fake.on('GET', 'secret/foo', { status: 200, body: envelope({ a: '1' }) });
    const res = await client.read('/secret/foo', { version: 2, skip: undefined });
    expect(res?.data).toEqual({ a: '1' });
    const [req] = fake.requests;
    expect(req?.path).toBe('secret/foo');
    expect(req?.query).toEqual({ version: '2' });
    expect(req?.headers['x-vault-token']).toBe('hvs.root');
    expect(req?.headers['x-vault-namespace']).toBe('team-a');
  });

  it('accepts an absolute API path (/v1/...), and reaches a mount named v1 by its relative path', async () => {
    fake.on('GET', 'sys/mounts', { status: 200, body: envelope({}) });
    await client.read('/v1/sys/mounts');
    expect(fake.requests[0]?.path).toBe('sys/mounts');
    fake.on('GET', 'v1/app', { status: 200, body: envelope({}) });
    await client.read('v1/app');
    expect(fake.requests[1]?.path).toBe('v1/app');
  });

  it('sends no token or namespace header when none is set', async () => {
    fake.on('GET', 'x', { status: 200, body: envelope({}) });
    await client.withToken(undefined).withNamespace(undefined).read('x');
    expect(fake.requests[0]?.headers['x-vault-token']).toBeUndefined();
    expect(fake.requests[0]?.headers['x-vault-namespace']).toBeUndefined();
  });

  it('writes with POST and a JSON body', async () => {
    fake.on('POST', 'secret/foo', { status: 204 });
    const res = await client.write('secret/foo', { n: '3', nested: { a: true } });
    expect(res).toBeNull();
    expect(fake.requests[0]?.method).toBe('POST');
    expect(fake.requests[0]?.headers['content-type']).toBe('application/json');
    expect(fake.requests[0]?.body).toEqual({ n: '3', nested: { a: true } });
  });

  it('lists with GET ?list=true', async () => {
    fake.on('LIST', 'secret/metadata', { status: 200, body: envelope({ keys: ['a', 'b/'] }) });
    const res = await client.list('secret/metadata');
    expect(res?.data?.keys).toEqual(['a', 'b/']);
    expect(fake.requests[0]?.query).toEqual({ list: 'true' });
  });

  it('deletes with DELETE and returns null for 204', async () => {
    fake.on('DELETE', 'secret/foo', { status: 204 });
    await expect(client.delete('secret/foo')).resolves.toBeNull();
    expect(fake.requests[0]?.method).toBe('DELETE');
  });

  it("reads a path's help with GET ?help=1: Vault's bare help object, not an envelope", async () => {
    fake.on('GET', 'sys/mounts', { status: 200, body: { help: 'Request: sys/mounts', see_also: null, openapi: { openapi: '3.0.2' } } });
    await expect(client.help('sys/mounts')).resolves.toEqual({ help: 'Request: sys/mounts', see_also: null, openapi: { openapi: '3.0.2' } });
    expect(fake.requests[0]?.query).toEqual({ help: '1' });
    expect(fake.requests[0]?.headers['x-vault-token']).toBe('hvs.root');
    fake.on('GET', 'sys/x', { status: 200, body: envelope({ help: 'not bare' }) });
    await expect(client.help('sys/x')).rejects.toBeInstanceOf(MalformedResponse);
  });

  it('percent-encodes path segments', async () => {
    fake.on('GET', 'secret/a b?c', { status: 200, body: envelope({}) });
    await client.read('secret/a b?c');
    expect(fake.requests[0]?.path).toBe('secret/a b?c');
  });
});

describe('errors', () => {
  it('maps a non-2xx answer to ApiError with status, errors and a joined message', async () => {
    fake.on('POST', 'sys/replication/dr/primary/enable', {
      status: 400,
      body: { errors: ['first problem', 'second problem'] },
    });
    const err = await client.write('sys/replication/dr/primary/enable', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    const api = err as ApiError;
    expect(api.status).toBe(400);
    expect(api.errors).toEqual(['first problem', 'second problem']);
    expect(api.message).toBe('first problem; second problem');
    expect(api.code).toBe(ErrorCode.invalidRequest);
    expect(api.method).toBe('POST');
  });

  it('keeps an empty errors list for a 404 read and still has a message', async () => {
    fake.on('GET', 'secret/none', { status: 404, body: { errors: [] } });
    const err = (await client.read('secret/none').catch((e: unknown) => e)) as ApiError;
    expect(err.status).toBe(404);
    expect(err.errors).toEqual([]);
    expect(err.message).toBe('HTTP 404');
    expect(err.code).toBe(ErrorCode.notFound);
  });

  it('reads Vault\'s envelope answered with a 404 (a deleted KV version, an unknown approle accessor) as a 404 of its data.error or of nothing', async () => {
    const envelope = (data: unknown) => ({ request_id: 'r', lease_id: '', renewable: false, lease_duration: 0, data, wrap_info: null, warnings: null, auth: null, mount_type: '' });
    fake.on('GET', 'secret/data/deleted', { status: 404, body: envelope({ data: null, metadata: { version: 2, deletion_time: '2024-05-01T10:00:00Z' } }) });
    fake.on('POST', 'auth/approle/role/r/secret-id-accessor/lookup', { status: 404, body: envelope({ error: 'failed to find accessor entry for secret_id_accessor: "a"' }) });
    await expect(client.read('secret/data/deleted')).rejects.toMatchObject({ status: 404, errors: [], code: ErrorCode.notFound });
    await expect(client.write('auth/approle/role/r/secret-id-accessor/lookup', { secret_id_accessor: 'a' })).rejects.toMatchObject({
      status: 404,
      errors: ['failed to find accessor entry for secret_id_accessor: "a"'],
    });
  });

  it('maps 403 and 503 to their codes', async () => {
    fake.on('GET', 'a', { status: 403, body: { errors: ['permission denied'] } });
    fake.on('GET', 'b', { status: 503, body: { errors: ['Vault is sealed'] } });
    await expect(client.read('a')).rejects.toMatchObject({ status: 403, code: ErrorCode.permissionDenied });
    await expect(client.read('b')).rejects.toMatchObject({ status: 503, code: ErrorCode.unavailable });
  });

  it('reports a refused connection as ConnectionFailed', async () => {
    const addr = fake.addr;
    await fake.close();
    fake = await FakeVault.start();
    const err = await new TesseraClient({ addr }).read('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionFailed);
    expect((err as ConnectionFailed).message).toContain('ECONNREFUSED');
  });

  it('rejects a 2xx body that is not an object', async () => {
    fake.on('GET', 'odd', { status: 200, body: [1, 2] });
    await expect(client.read('odd')).rejects.toBeInstanceOf(MalformedResponse);
  });

  it('uses the injected fetch', async () => {
    const seen: string[] = [];
    const fetchImpl: typeof fetch = async (input) => {
      seen.push(String(input));
      return new Response(JSON.stringify(envelope({ via: 'fake' })), { status: 200 });
    };
    const res = await new TesseraClient({ addr: 'http://example.invalid', fetchImpl }).read('p');
    expect(res?.data).toEqual({ via: 'fake' });
    expect(seen).toEqual(['http://example.invalid/v1/p']);
  });
});

describe('sys helpers', () => {
  it('init, unseal, seal and seal status use the WIRE shapes', async () => {
    fake.on('POST', 'sys/init', { status: 200, body: { keys: ['aa'], keys_base64: ['qg=='], root_token: 'hvs.r' } });
    const sealed = { type: 'shamir', initialized: true, sealed: true, t: 1, n: 1, progress: 0, nonce: '', version: '0.1.0' };
    fake.on('POST', 'sys/unseal', { status: 200, body: { ...sealed, sealed: false } });
    fake.on('POST', 'sys/seal', { status: 204 });
    fake.on('GET', 'sys/seal-status', { status: 200, body: sealed });

    const init = await client.sys.init({ secret_shares: 1, secret_threshold: 1 });
    expect(init.root_token).toBe('hvs.r');
    expect(fake.requests[0]?.body).toEqual({ secret_shares: 1, secret_threshold: 1 });
    expect((await client.sys.unseal({ key: 'aa' })).sealed).toBe(false);
    expect(fake.requests[1]?.body).toEqual({ key: 'aa' });
    await client.sys.unseal({ reset: true });
    expect(fake.requests[2]?.body).toEqual({ reset: true });
    await expect(client.sys.seal()).resolves.toBeUndefined();
    expect((await client.sys.sealStatus()).sealed).toBe(true);
  });

  it('health returns the body for its informational codes, including overrides', async () => {
    const body = { initialized: true, sealed: true, standby: false, version: '0.1.0' };
    fake.on('GET', 'sys/health', (req) => ({ status: req.query['sealedcode'] ? Number(req.query['sealedcode']) : 503, body }));
    const plain = await client.sys.health();
    expect(plain.status).toBe(503);
    expect(plain.sealed).toBe(true);
    const overridden = await client.sys.health({ sealedcode: 299, standbyok: true });
    expect(overridden.status).toBe(299);
    expect(fake.requests[1]?.query).toEqual({ sealedcode: '299', standbyok: 'true' });
  });

  it('health still throws for a status that is not one of its answers', async () => {
    fake.on('GET', 'sys/health', { status: 500, body: { errors: ['boom'] } });
    await expect(client.sys.health()).rejects.toMatchObject({ status: 500, errors: ['boom'] });
  });

  it('leader, ha-status and step-down use the HA endpoints', async () => {
    const leader = { ha_enabled: true, is_self: false, active_time: '0001-01-01T00:00:00Z', leader_address: 'http://a:8200', leader_cluster_address: 'https://a:8201', performance_standby: false, performance_standby_last_remote_wal: 0, last_wal: 3 };
    fake.on('GET', 'sys/leader', { status: 200, body: leader });
    const node = { hostname: 'a', api_address: 'http://a:8200', cluster_address: 'https://a:8201', active_node: true, last_echo: null, version: '0.1.0' };
    fake.on('GET', 'sys/ha-status', { status: 200, body: envelope({ nodes: [node] }, { nodes: [node] }) });
    fake.on('PUT', 'sys/step-down', { status: 204 });
    expect(await client.sys.leader()).toEqual(leader);
    expect(await client.sys.haStatus()).toEqual({ nodes: [node] });
    await expect(client.sys.stepDown()).resolves.toBeUndefined();
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET sys/leader', 'GET sys/ha-status', 'PUT sys/step-down']);
  });

  it('ha-status reads the list from data when the top level has none', async () => {
    const node = { hostname: 'b', api_address: 'http://b:8200', cluster_address: 'https://b:8201', active_node: false, last_echo: '2026-01-01T00:00:00Z', version: '0.1.0' };
    fake.on('GET', 'sys/ha-status', { status: 200, body: envelope({ nodes: [node] }) });
    expect((await client.sys.haStatus()).nodes).toEqual([node]);
  });

  it('mounts returns the data map', async () => {
    fake.on('GET', 'sys/mounts', { status: 200, body: envelope({ 'secret/': { type: 'kv', options: { version: '2' } } }) });
    expect((await client.sys.mounts())['secret/']?.options?.['version']).toBe('2');
  });
});

describe('replication helpers', () => {
  it('status returns both kinds, narrowed by mode', async () => {
    fake.on('GET', 'sys/replication/status', {
      status: 200,
      body: envelope({ dr: { mode: 'secondary', last_remote_wal: 7 }, performance: { mode: 'disabled' } }),
    });
    const status = await client.replication.status();
    expect(status.dr.mode === 'secondary' ? status.dr.last_remote_wal : -1).toBe(7);
    expect(status.performance.mode).toBe('disabled');
  });

  it('reindex posts the flags to the local endpoint and returns the warnings', async () => {
    fake.on('POST', 'sys/replication/reindex', { status: 200, body: envelope(null, { warnings: ['done'] }) });
    const res = await client.replication.reindex({ diff: true, skipFlush: true });
    expect(res.warnings).toEqual(['done']);
    expect(fake.requests[0]?.body).toEqual({ diff: true, force: false, skip_flush: true });
  });

  it('reindex and merkle-check use the DR secondary endpoints with a DR operation token', async () => {
    fake.on('POST', 'sys/replication/dr/secondary/reindex', { status: 204 });
    const report = { merkle_corruption_report: { corrupted_root: false, last_corruption_check_epoch: '', corrupted_tree_map: {} } };
    fake.on('POST', 'sys/replication/dr/secondary/merkle-check', { status: 200, body: envelope(report) });
    expect(await client.replication.reindex({ force: true, drOperationToken: 'op' })).toEqual({ warnings: [] });
    expect(fake.requests[0]?.body).toEqual({ diff: false, force: true, skip_flush: false, dr_operation_token: 'op' });
    expect(await client.replication.merkleCheck({ drOperationToken: 'op' })).toEqual(report);
    expect(fake.requests[1]?.body).toEqual({ dr_operation_token: 'op' });
  });

  it('merkle-check without a token goes to the local endpoint', async () => {
    fake.on('POST', 'sys/replication/merkle-check', { status: 200, body: envelope(null) });
    await expect(client.replication.merkleCheck()).rejects.toBeInstanceOf(MalformedResponse);
    expect(fake.requests[0]?.path).toBe('sys/replication/merkle-check');
  });
});
