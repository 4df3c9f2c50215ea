/**
 * Bad input against a real dev node: a few hundred generated bad requests (bad-input.arbitraries.ts)
 * and one oversized body. Never a 500, every error is Vault's {"errors": [...]} JSON, and nothing
 * changes: the Merkle root, the WAL position, the mounts and a canary secret are as before.
 *
 * The node's token tidy runs every 60 s and would legitimately change state by revoking the
 * expired token below; this file finishes well within that.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { eventually, rawRequest, useHarness, vault, type RawReply, type StartedNode, type VaultHttp } from '../harness/index.js';
import { badRequest, type BadRequest, type Tokens } from './bad-input.arbitraries.js';

const h = useHarness();
let node: StartedNode;
let root: VaultHttp;
let rootToken: string;
let tokens: Tokens;
const canaryValue = `canary-${randomUUID()}`;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

interface Snapshot {
  readonly merkleRoot: string;
  readonly lastWal: number;
  readonly mounts: string[];
}

async function snapshot(): Promise<Snapshot> {
  const status = await vault(node.apiAddr).get('sys/replication/status');
  expect(status.status).toBe(200);
  const mounts = await root.get('sys/mounts');
  return { merkleRoot: status.body.data.dr.merkle_root, lastWal: status.body.data.dr.last_wal, mounts: Object.keys(mounts.body.data).sort() };
}

async function expectCanaryIntact(): Promise<void> {
  const r = await root.get('secret/data/canary');
  expect(r.status).toBe(200);
  expect(r.body.data.data).toEqual({ v: canaryValue });
  expect(r.body.data.metadata.version).toBe(1);
}

function send(r: BadRequest): Promise<RawReply> {
  const headers: Record<string, string> = {};
  const token = r.token === 'root' ? rootToken : r.token;
  if (r.token !== 'none') {
    if (r.tokenHeader === 'bearer') headers.Authorization = `Bearer ${token}`;
    else headers['X-Vault-Token'] = token;
  }
  if (r.body !== undefined) headers['Content-Type'] = 'application/json';
  return rawRequest(node.apiAddr, { method: r.method, path: r.path, headers, ...(r.body !== undefined ? { body: r.body } : {}), agent, timeoutMs: 10_000 });
}

/** Vault's error shape: JSON content type, and exactly {"errors": [string, ...]}. */
function expectErrorBody(reply: RawReply): void {
  expect(reply.headers['content-type']).toMatch(/^application\/json/);
  const body: unknown = JSON.parse(reply.text);
  expect(body).toEqual({ errors: expect.any(Array) });
  for (const e of (body as { errors: unknown[] }).errors) expect(typeof e).toBe('string');
}

let before: Snapshot;

beforeAll(async () => {
  node = await h.startNode({ dev: true });
  rootToken = node.rootToken!;
  root = vault(node.apiAddr, rootToken);
  expect((await root.put('secret/data/canary', { data: { v: canaryValue } })).status).toBe(200);

  const revoked = (await root.post('auth/token/create', { policies: ['default'] })).body.auth.client_token as string;
  expect((await root.post('auth/token/revoke', { token: revoked })).status).toBe(204);
  const expired = (await root.post('auth/token/create', { policies: ['default'], ttl: '1s' })).body.auth.client_token as string;
  await eventually(async () => expect((await vault(node.apiAddr, expired).get('auth/token/lookup-self')).status).toBe(403), {
    timeoutMs: 5_000,
    intervalMs: 100,
  });
  tokens = { revoked, expired };
  before = await snapshot();
}, 30_000);

afterAll(async () => {
  agent.destroy();
  await node?.stop();
}, 20_000);

test('generated bad requests: never a 500, always {"errors": [...]}, the expected status', async () => {
  const seen = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(badRequest(tokens), async (r) => {
      seen.set(r.kind, (seen.get(r.kind) ?? 0) + 1);
      const reply = await send(r);
      expect({ request: r, status: reply.status }).toEqual({ request: r, status: r.status ?? expect.any(Number) });
      expect(reply.status).toBeGreaterThanOrEqual(400);
      expect(reply.status).toBeLessThan(500);
      expectErrorBody(reply);
    }),
    { numRuns: 300, interruptAfterTimeLimit: 25_000 },
  );
  // Every kind of bad input was exercised.
  expect(seen.size).toBe(12);
}, 40_000);

test('a 33 MiB body is refused with 413 and the error shape', async () => {
  const size = 33 * 1024 * 1024;
  const body = Buffer.alloc(size, 'a');
  body.write('{"data":{"v":"', 0);
  body.write('"}}', size - 3);
  const reply = await rawRequest(node.apiAddr, {
    method: 'PUT',
    path: '/v1/secret/data/big',
    headers: { 'X-Vault-Token': rootToken, 'Content-Type': 'application/json' },
    body,
    timeoutMs: 30_000,
  });
  expect(reply.status).toBe(413);
  expectErrorBody(reply);
  expect((await root.get('secret/data/big')).status).toBe(404);
}, 40_000);

test('nothing changed: Merkle root, WAL position, mounts and the canary', async () => {
  expect(await snapshot()).toEqual(before);
  await expectCanaryIntact();
});

// Last, so that a node that resolves dot segments cannot spoil the checks above.
test('dot segments (.., ., %2e%2e) are refused, not resolved', async () => {
  const cases: BadRequest[] = [
    { kind: 'dots', method: 'PUT', path: '/v1/secret/../sys/mounts/evil', token: 'root', tokenHeader: 'x-vault-token', body: JSON.stringify({ type: 'kv' }) },
    { kind: 'dots', method: 'PUT', path: '/v1/secret/data/x/../canary', token: 'root', tokenHeader: 'x-vault-token', body: JSON.stringify({ data: { v: 'evil' } }) },
    { kind: 'dots', method: 'PUT', path: '/v1/secret/data/%2e%2e/data/canary', token: 'root', tokenHeader: 'x-vault-token', body: JSON.stringify({ data: { v: 'evil' } }) },
    { kind: 'dots', method: 'DELETE', path: '/v1/secret/./data/canary', token: 'root', tokenHeader: 'x-vault-token' },
    { kind: 'dots', method: 'GET', path: '/v1/./sys/health', token: 'root', tokenHeader: 'x-vault-token' },
  ];
  const answers: Array<{ path: string; status: number }> = [];
  for (const c of cases) answers.push({ path: `${c.method} ${c.path}`, status: (await send(c)).status });
  expect(answers).toEqual(cases.map((c) => ({ path: `${c.method} ${c.path}`, status: 400 })));
  expect(await snapshot()).toEqual(before);
  await expectCanaryIntact();
});
