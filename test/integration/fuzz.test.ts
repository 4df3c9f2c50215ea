/**
 * Issue 11 item 5: property-based fuzzing of the HTTP surface over a replicated topology of
 * in-process nodes (a DR primary that is also a performance primary, a DR secondary and a
 * performance secondary), so both kinds' routes answer in every role. At least 10,000 generated
 * requests (fuzz.arbitraries.ts: every declared route with random and edge parameters, the
 * mounted engines, unknown paths and methods including LIST, random tokens, namespaces, headers
 * and bodies, and the e2e bad-input kinds) in batches of BATCH, with these properties (checked by fuzz.oracle.ts):
 *
 * - never a 5xx, except a 503 whose message is one of ALLOWED_503 (fuzz.oracle.ts: documented refusals);
 * - every 4xx/503 is JSON exactly `{"errors": [string, ...]}` (HEAD answers carry no body);
 * - a request generated to be refused (the bad-input kinds) is refused (>= 400);
 * - a batch in which nothing was accepted (every answer >= 400, or a plain read) leaves every
 *   node's Merkle roots, WAL position and both replication modes exactly as before. A batch with an
 *   accepted write changes state legitimately: the suite waits until the secondaries hold it and
 *   takes a new baseline, after checking that the DR secondary holds exactly the primary's data
 *   and the canary secret is intact. Valid tokens never reach destructive endpoints (`destructive`).
 * - sys/health's documented 472 (DR secondary) carries the health status, not an error; a
 *   404 may be `{"errors": []}` as in Vault, or Vault's envelope (its RespondWithStatusCode).
 *
 * Some requests are followed by garbage on the same socket (fuzz.garbage.ts): their own answer
 * must come first, so one answered 400 changed nothing and one that changed state says so.
 *
 * Defects the fuzz found are kept as `regression:` tests with their inputs.
 *
 * The seed is fixed in CI and random elsewhere, and always in the test's name; FUZZ_SEED=<n>
 * reproduces a run, FUZZ_REQUESTS=<n> changes the count. On a failure the batch's offending
 * request is in the message (shrinking is off: a batch is replayed from the seed instead).
 */
import { KINDS } from '../../src/core/replication/index.js';
import http from 'node:http';
import fc from 'fast-check';
import { startCluster, useHarness, waitInSync, type Cluster, type InProcessNode } from '../harness/index.js';
import type { Tokens } from '../e2e/bad-input.arbitraries.js';
import { destructive, fuzzRequest, routeShapes, type FuzzRequest, type Target } from './fuzz.arbitraries.js';
import { bytesOf, garbageTail, sendRaw, type Tail } from './fuzz.garbage.js';
import { MALFORMED, describeRequest, mayChange, pool, violation, type Answer } from './fuzz.oracle.js';

const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : process.env.CI ? 20_261_123 : Math.floor(Math.random() * 2 ** 31);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const BATCH = 25;
/** FUZZ_VERBOSE=1: also print the most frequent error answers (to tune the generators). */
const VERBOSE = process.env.FUZZ_VERBOSE === '1';
const CONCURRENCY = 8;

const h = useHarness();
let cluster: Cluster<InProcessNode>;
const nodes = {} as Record<Target, InProcessNode>;
/** Per target, the literal value of each valid token choice. */
const valid = {} as Record<Target, { root: string; limited: string; 'other-ns': string }>;
let tokens: Tokens;
const agents = {} as Record<Target, http.Agent>;

const LIMITED = `
path "secret/data/fuzz/*" { capabilities = ["create", "read", "update", "list"] }
path "secret/metadata/*" { capabilities = ["list", "read"] }
path "sys/mounts" { capabilities = ["read"] }
`;

async function createToken(n: InProcessNode, body: object, headers?: Record<string, string>): Promise<string> {
  const r = await n.vault().post('auth/token/create', body, headers ? { headers } : {});
  if (r.status !== 200) throw new Error(`token create on ${n.apiAddr}: ${r.status} ${r.text}`);
  return r.body.auth.client_token as string;
}

async function expectOk(p: Promise<{ status: number; text: string }>, what: string): Promise<void> {
  const r = await p;
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
}

async function settle(): Promise<void> {
  await waitInSync(nodes.primary.apiAddr, nodes.dr.apiAddr, 20_000, 'dr');
  await waitInSync(nodes.primary.apiAddr, nodes.perf.apiAddr, 20_000, 'performance');
}

beforeAll(async () => {
  // No token tidy: a token a generated request made with a short TTL would be revoked mid-run, a
  // legitimate change the no-change property would report.
  cluster = await startCluster(h, { node: { inProcess: true, tokenTidyMs: 0 }, mountKv2: true, dr: ['dr'], performance: ['perf'] });
  nodes.primary = cluster.primary;
  nodes.dr = cluster.dr[0]!;
  nodes.perf = cluster.performance[0]!;
  const p = nodes.primary.vault();
  await expectOk(p.put('secret/data/canary', { data: { v: 'canary' } }), 'canary');
  await expectOk(p.put('sys/policies/acl/fuzz-limited', { policy: LIMITED }), 'policy');
  await expectOk(p.post('sys/auth/userpass', { type: 'userpass' }), 'userpass');
  await expectOk(p.post('sys/auth/approle', { type: 'approle' }), 'approle');
  await expectOk(p.post('sys/mounts/transit', { type: 'transit' }), 'transit');
  await expectOk(p.post('transit/keys/fuzz', { exportable: true, allow_plaintext_backup: true }), 'transit key');
  await expectOk(p.post('transit/keys/fuzz-sign', { type: 'ed25519' }), 'transit signing key');
  await expectOk(p.post('sys/namespaces/ns1'), 'namespace');
  await expectOk(p.put('sys/policies/acl/fuzz-limited', { policy: LIMITED }, { headers: { 'X-Vault-Namespace': 'ns1' } }), 'ns policy');
  const revoked = await createToken(nodes.primary, { policies: ['default'], ttl: '768h' });
  await expectOk(p.post('auth/token/revoke', { token: revoked }), 'revoke');
  // Bad-input's "expired" token is a second revoked one: a token that expires mid-run is revoked by
  // the node's tidy (every 60 s), a legitimate change the no-change property would report.
  const revoked2 = await createToken(nodes.primary, { policies: ['default'], ttl: '768h' });
  await expectOk(p.post('auth/token/revoke', { token: revoked2 }), 'revoke');
  tokens = { revoked, expired: revoked2 };
  await settle();
  for (const t of ['primary', 'perf'] as const) {
    const n = nodes[t];
    valid[t] = {
      root: n.rootToken,
      limited: await createToken(n, { policies: ['fuzz-limited'], ttl: '768h' }),
      'other-ns': await createToken(n, { policies: ['fuzz-limited'], ttl: '768h' }, { 'X-Vault-Namespace': 'ns1' }),
    };
  }
  // A DR secondary serves no client token; the primary's (replicated) ones are the plausible guesses.
  valid.dr = { ...valid.primary };
  for (const t of ['primary', 'dr', 'perf'] as const) agents[t] = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  await settle();
}, 60_000);

afterAll(() => {
  for (const a of Object.values(agents)) a.destroy();
});

function tokenOf(r: FuzzRequest): string | undefined {
  if (r.token === 'none') return undefined;
  if (r.token === 'revoked') return tokens.revoked;
  if (typeof r.token === 'object') return r.token.literal;
  return valid[r.target][r.token];
}

function authOf(r: FuzzRequest): Record<string, string> {
  const token = tokenOf(r);
  if (token === undefined) return {};
  return r.tokenHeader === 'bearer' ? { Authorization: `Bearer ${token}` } : { 'X-Vault-Token': token };
}

/**
 * Sends `r` with `tail` after it in one socket write (fuzz.garbage.ts). The request's own answer
 * comes first and is returned; after it, at most the parser's 400 for the tail.
 */
async function sendWithTail(r: FuzzRequest, tail: Tail): Promise<Answer> {
  const host = new URL(nodes[r.target].apiAddr).host;
  const { first, rest } = await sendRaw(nodes[r.target].apiAddr, bytesOf(r, host, authOf(r), tail), r.method === 'HEAD');
  if (rest.length > 1 || rest.some((a) => JSON.stringify(a) !== JSON.stringify(MALFORMED))) {
    throw new Error(`after the answer to a request with a "${tail}" tail, more than the parser's 400: ${JSON.stringify(rest).slice(0, 500)}: ${describeRequest(r)}`);
  }
  return first;
}

/** Sends `r` byte for byte; an event stream (a 200 of sys/replication/events) is answered at its headers. */
function send(r: FuzzRequest): Promise<Answer> {
  const base = new URL(nodes[r.target].apiAddr);
  const headers: Record<string, string | number> = { ...r.headers, ...authOf(r) };
  if (r.body !== undefined) headers['Content-Length'] = Buffer.byteLength(r.body);
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, method: r.method, path: r.path, headers, agent: agents[r.target], timeout: 15_000 }, (res) => {
      const contentType = String(res.headers['content-type'] ?? '');
      if (contentType.startsWith('text/event-stream')) {
        resolve({ status: res.statusCode ?? 0, contentType, text: '' });
        res.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 15 s')));
    req.on('error', reject);
    req.end(r.body);
  });
}

/** What refused requests must not change, on every node. */
async function state(): Promise<unknown> {
  const out: Record<string, unknown> = {};
  for (const t of ['primary', 'dr', 'perf'] as const) {
    const n = nodes[t];
    const r = await n.vault(null).get('sys/replication/status');
    if (r.status !== 200) throw new Error(`${t} replication status: ${r.status} ${r.text}`);
    const { dr, performance } = r.body.data;
    out[t] = {
      dr: { mode: dr.mode, merkle_root: dr.merkle_root },
      performance: { mode: performance.mode, merkle_root: performance.merkle_root },
      engine: { merkle_root: n.node.engine.merkleRoot().toString('hex'), wal: String(n.node.engine.lastGuard().index) },
    };
  }
  return out;
}

/** 'intact' while the canary written in beforeAll is readable at its first version, else what was read. */
async function canaryOn(t: Target): Promise<string> {
  const r = await nodes[t].vault().get('secret/data/canary');
  const ok = r.status === 200 && r.body.data.data?.v === 'canary' && r.body.data.metadata.version === 1;
  return ok ? 'intact' : `${r.status} ${r.text.slice(0, 300)}`;
}

test('valid tokens never reach the destructive endpoints (the exclusion list), whatever the prefix or query', () => {
  const refused = [
    ['PUT', '/v1/sys/seal'], ['PUT', '/v1/sys/step-down'], ['POST', '/v1/ns1/sys/seal?x=1'],
    ...KINDS.flatMap((k) => ['primary/enable', 'primary/disable', 'primary/demote', 'primary/revoke-secondary', 'secondary/enable', 'secondary/disable', 'secondary/promote', 'secondary/update-primary'].map((o) => ['POST', `/v1/sys/replication/${k}/${o}`])),
    ['POST', '/v1/sys/replication/performance/primary/paths-filter/perf'], ['DELETE', '/v1/sys/replication/performance/primary/paths-filter/perf'],
    ['POST', '/v1/sys/replication/reindex'], ['POST', '/v1/sys/replication/dr/secondary/reindex'],
    ['PUT', '/v1/sys/generate-root/attempt'], ['DELETE', '/v1/sys/generate-root/attempt'], ['PUT', '/v1/sys/replication/dr/secondary/generate-operation-token/attempt'],
    ['POST', '/v1/auth/token/revoke-self'], ['DELETE', '/v1/sys/mounts/secret'], ['POST', '/v1/sys/mounts/secret/tune'], ['DELETE', '/v1/sys/namespaces/ns1'],
    ['PUT', '/v1/sys/policies/acl/fuzz-limited'], ['DELETE', '/v1/sys/auth/userpass'], ['PUT', '/v1/secret/data/canary'], ['DELETE', '/v1/secret/metadata/canary'], ['POST', '/v1/secret/config'],
  ];
  expect(refused.filter(([m, p]) => !destructive(m!, p!))).toEqual([]);
  const allowed = [['GET', '/v1/sys/mounts/secret'], ['GET', '/v1/secret/data/canary'], ['PUT', '/v1/secret/data/x'], ['POST', '/v1/auth/token/create'], ['GET', '/v1/sys/replication/dr/status'], ['POST', '/v1/sys/replication/dr/primary/secondary-token']];
  expect(allowed.filter(([m, p]) => destructive(m!, p!))).toEqual([]);
});

test('regression: a request line Node\'s parser refuses (a raw non-ASCII byte in the path) is answered in Vault\'s shape', async () => {
  // Found by the fuzz (seed 1): Node answered a bare 400 with no body.
  const r: FuzzRequest = { kind: 'regression', target: 'perf', method: 'DELETE', path: '/v1/nosuch/sys/replication/performance/primary/paths-filter/é?a=%ZZ', token: { literal: 'hvs.RC63zDJ32Y6l849V6QFYe237' }, tokenHeader: 'bearer', headers: { 'X-Vault-Namespace': 'nosuch', 'Content-Type': 'garbage/;;', 'X-Vault-Wrap-TTL': '1h' }, body: '{}', mustRefuse: false };
  for (const target of ['primary', 'dr', 'perf'] as const) {
    const a = await send({ ...r, target });
    expect({ status: a.status, contentType: a.contentType, body: JSON.parse(a.text) }).toEqual({ status: 400, contentType: 'application/json', body: { errors: ['malformed HTTP request: bad request'] } });
    expect(violation(r, a)).toBeUndefined();
  }
  // The same for HEAD: no body (a client would read one as its next answer), the connection stays parseable.
  const head = await send({ ...r, method: 'HEAD', body: undefined as never });
  expect({ status: head.status, text: head.text }).toEqual({ status: 400, text: '' });
});

test('regression: a DR secondary refuses response wrapping (it would store a token and diverge from its primary)', async () => {
  // Found by the fuzz (seed 2): two wrapped status reads made the DR secondary's WAL and Merkle root differ from its primary's.
  const before = await state();
  for (const path of ['/v1/sys/replication/dr/status?version=1', '/v1/sys/replication/performance/status?help=1']) {
    const r: FuzzRequest = { kind: 'regression', target: 'dr', method: 'GET', path, token: 'none', tokenHeader: 'x-vault-token', headers: { 'X-Vault-Wrap-TTL': '30m' }, mustRefuse: true };
    const a = await send(r);
    expect({ status: a.status, body: JSON.parse(a.text) }).toEqual({ status: 400, body: { errors: ['response wrapping is not available on a DR secondary'] } });
    expect(violation(r, a)).toBeUndefined();
  }
  expect(await state()).toEqual(before);
  await settle();
});

test('regression: a namespace named like a mount is refused, and the mount stays readable', async () => {
  // Found by the fuzz (seed 101): POST sys/namespaces/secret as root answered 200 and hid secret/, the canary answered 404.
  const before = await state();
  for (const [prefix, ns] of [['', 'secret'], ['', 'secret/'], ['', '/secret'], ['', 'secret/child']] as const) {
    const r: FuzzRequest = { kind: 'regression', target: 'primary', method: 'POST', path: `/v1/${prefix}sys/namespaces/${ns}`, token: 'root', tokenHeader: 'x-vault-token', headers: { 'Content-Type': 'application/json' }, body: '{"a":1,"a":2}', mustRefuse: true };
    const a = await send(r);
    expect({ ns, status: a.status }).toEqual({ ns, status: 400 });
    expect(violation(r, a)).toBeUndefined();
  }
  expect(await state()).toEqual(before);
  expect(await canaryOn('primary')).toBe('intact');
});

test('regression: a mount at the path of a child namespace is refused (it could never be reached)', async () => {
  const before = await state();
  for (const path of ['ns1', 'ns1/', 'ns1/kv']) {
    const r = await nodes.primary.vault().post(`sys/mounts/${path}`, { type: 'kv' });
    expect({ path, status: r.status, errors: r.body?.errors }).toEqual({ path, status: 400, errors: [expect.stringMatching(/namespace "ns1\/" takes that path/)] });
  }
  expect(await state()).toEqual(before);
  // A mount whose name merely starts like the namespace is fine.
  expect((await nodes.primary.vault().post('sys/mounts/ns1x', { type: 'kv' })).status).toBe(204);
  await settle();
});

test(`${REQUESTS} generated requests over every route, both kinds, every role (seed ${SEED}): no 5xx, Vault's error shape, refusals change nothing`, async () => {
  const shapes = routeShapes(nodes.primary.node.routes);
  const seen = { patterns: new Set<string>(), kinds: new Map<string, number>(), statuses: new Map<number, number>(), targets: new Set<string>(), methods: new Set<string>(), errors: new Map<string, number>(), tails: new Map<string, number>() };
  let sent = 0;
  let clean = 0;
  let dirty = 0;
  let before = await state();
  const started = Date.now();

  const result = await fc.check(
    fc.asyncProperty(fc.array(fuzzRequest(shapes, tokens), { minLength: BATCH, maxLength: BATCH }), async (batch) => {
      // Some requests are followed by garbage on their socket (fuzz.garbage.ts): an answer of 400
      // to one that changed state would fail the no-change property below.
      const tails = batch.map((_r, i) => garbageTail(SEED, sent + i));
      const answers = await pool(batch.map((r, i) => [r, tails[i]] as const), CONCURRENCY, ([r, tail]) => {
        if (tail !== undefined) seen.tails.set(tail, (seen.tails.get(tail) ?? 0) + 1);
        return (tail === undefined ? send(r) : sendWithTail(r, tail)).catch((e: unknown) => {
          throw new Error(`no HTTP answer (${(e as Error).message})${tail === undefined ? '' : ` with a "${tail}" tail`}: ${describeRequest(r)}`);
        });
      });
      sent += batch.length;
      batch.forEach((r, i) => {
        const a = answers[i]!;
        seen.kinds.set(r.kind, (seen.kinds.get(r.kind) ?? 0) + 1);
        seen.statuses.set(a.status, (seen.statuses.get(a.status) ?? 0) + 1);
        seen.targets.add(r.target);
        if (r.pattern !== undefined) seen.patterns.add(r.pattern);
        seen.methods.add(r.method);
        if (VERBOSE && a.status >= 400) {
          const m = `${a.status} ${a.text.replace(/"[^"]*(\/|%)[^"]*"|\d+/g, '…').slice(0, 90)}`;
          seen.errors.set(m, (seen.errors.get(m) ?? 0) + 1);
        }
        const v = violation(r, a);
        if (v !== undefined) throw new Error(`${v}: ${describeRequest(r)} -> ${a.status} ${a.text.slice(0, 500)}`);
      });
      const accepted = batch.filter((r, i) => mayChange(r, answers[i]!));
      if (accepted.length > 0) {
        dirty++;
        await settle().catch(async (e: unknown) => {
          throw new Error(`the secondaries did not catch up after accepted requests ${accepted.map((r, i) => `${describeRequest(r)} -> ${answers[batch.indexOf(r)]!.status}`).join(', ')}: ${(e as Error).message}; state ${JSON.stringify(await state())}`);
        });
        const canary = await canaryOn('primary');
        if (canary !== 'intact') throw new Error(`the canary is ${canary} after accepted requests ${accepted.map((r) => `${describeRequest(r)} -> ${answers[batch.indexOf(r)]!.status}`).join(', ')}`);
        before = await state();
      } else {
        clean++;
        const after = await state();
        if (JSON.stringify(after) !== JSON.stringify(before)) {
          throw new Error(`a batch of refused requests changed the state: ${batch.map((r, i) => `${describeRequest(r)} -> ${answers[i]!.status} ${answers[i]!.text.slice(0, 200)}`).join('\n')}\nbefore ${JSON.stringify(before)}\nafter ${JSON.stringify(after)}`);
        }
      }
    }),
    { seed: SEED, numRuns: Math.ceil(REQUESTS / BATCH), endOnFailure: true },
  );
  // The offending request alone, not fast-check's dump of the whole batch.
  if (result.failed) throw new Error(`seed ${SEED}, after ${sent} requests: ${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}`);

  const seconds = (Date.now() - started) / 1000;
  console.log(`fuzz: seed ${SEED}, ${sent} requests in ${seconds.toFixed(1)} s (${Math.round(sent / seconds)}/s), ${clean} refused-only batches, ${dirty} with accepted writes; kinds ${JSON.stringify(Object.fromEntries(seen.kinds))}; garbage tails ${JSON.stringify(Object.fromEntries(seen.tails))}; statuses ${JSON.stringify(Object.fromEntries(seen.statuses))}`);
  if (VERBOSE) console.log([...seen.errors].sort((x, y) => y[1] - x[1]).slice(0, 40).map(([m, c]) => `${c}\t${m}`).join('\n'));
  expect(sent).toBeGreaterThanOrEqual(REQUESTS);
  expect([...seen.targets].sort()).toEqual(['dr', 'perf', 'primary']);
  // Every declared route (both kinds' replication routes included) was sent at least once.
  expect(shapes.map((s) => s.pattern).filter((p) => !seen.patterns.has(p))).toEqual([]);
  expect(shapes.filter((s) => /^sys\/replication\/performance\//.test(s.pattern)).length).toBeGreaterThan(5);
  expect(shapes.filter((s) => /^sys\/replication\/dr\//.test(s.pattern)).length).toBeGreaterThan(5);
  for (const m of ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'LIST', 'HEAD']) expect([...seen.methods]).toContain(m);
  expect([...seen.tails.keys()].sort()).toEqual(['http10', 'http99', 'nul']);
  // Most batches must exercise the no-change property, not only the shape properties.
  expect(clean).toBeGreaterThan(dirty);
  // At the end the DR secondary still holds exactly the primary's data, and the canary that every
  // check-and-set and bad-token request aimed at is at its first version, on both kinds' ends.
  await settle();
  expect({ primary: await canaryOn('primary'), perf: await canaryOn('perf') }).toEqual({ primary: 'intact', perf: 'intact' });
}, 300_000);
