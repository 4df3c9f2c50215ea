/**
 * Logs at debug level carry no secrets: after init, unseal, a secret write and read, token
 * creation, wrapping and unwrapping (and a request with a wrong token), no line on stderr or
 * stdout holds a token, the unseal key or a secret value; every stderr line is JSON, and every
 * request line has a req_id.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { initAndUnseal, mountKv2, useHarness, vault } from '../harness/index.js';

const h = useHarness();

test('debug logs are JSON, carry request ids, and leak no secrets', async () => {
  const node = await h.startNode({ logLevel: 'debug' });
  const init = await initAndUnseal(node.apiAddr);
  await mountKv2(node.apiAddr, init.rootToken);
  const root = vault(node.apiAddr, init.rootToken);
  const secrets: Record<string, string> = {
    rootToken: init.rootToken,
    unsealKeyHex: init.keys[0]!,
    unsealKeyBase64: init.keysBase64[0]!,
  };

  secrets.secretValue = `log-marker-${randomUUID()}`;
  expect((await root.put('secret/data/app', { data: { password: secrets.secretValue } })).status).toBe(200);
  expect((await root.get('secret/data/app')).body.data.data.password).toBe(secrets.secretValue);

  const created = await root.post('auth/token/create', { policies: ['default'], ttl: '1h' });
  expect(created.status).toBe(200);
  secrets.createdToken = created.body.auth.client_token;
  expect((await vault(node.apiAddr, secrets.createdToken).get('auth/token/lookup-self')).status).toBe(200);

  const wrappedCreate = await root.post('auth/token/create', { policies: ['default'] }, { headers: { 'X-Vault-Wrap-TTL': '60s' } });
  secrets.wrapToken1 = wrappedCreate.body.wrap_info.token;
  const unwrappedCreate = await vault(node.apiAddr).post('sys/wrapping/unwrap', { token: secrets.wrapToken1 });
  expect(unwrappedCreate.status).toBe(200);
  secrets.unwrappedToken = unwrappedCreate.body.auth.client_token;

  secrets.wrappedValue = `log-wrapped-${randomUUID()}`;
  const wrapped = await root.post('sys/wrapping/wrap', { v: secrets.wrappedValue }, { headers: { 'X-Vault-Wrap-TTL': '60s' } });
  secrets.wrapToken2 = wrapped.body.wrap_info.token;
  const unwrapped = await vault(node.apiAddr, secrets.wrapToken2).post('sys/wrapping/unwrap', {});
  expect(unwrapped.body.data).toEqual({ v: secrets.wrappedValue });

  // A wrong token that looks real, and a spent wrapping token: error paths log too.
  secrets.wrongToken = `hvs.${randomBytes(18).toString('base64url').slice(0, 24)}`;
  expect((await vault(node.apiAddr, secrets.wrongToken).get('secret/data/app')).status).toBe(403);
  expect((await vault(node.apiAddr).post('sys/wrapping/unwrap', { token: secrets.wrapToken2 })).status).toBeGreaterThanOrEqual(400);

  expect(await node.stop()).toEqual({ code: 0, signal: null });

  for (const [name, value] of Object.entries(secrets)) {
    expect(typeof value === 'string' && value.length >= 16).toBe(true);
    const leaks = [...node.stderrLines, ...node.stdoutLines].filter((line) => line.includes(value));
    expect({ name, leaks }).toEqual({ name, leaks: [] });
  }

  const nonEmpty = node.stderrLines.filter((l) => l.trim() !== '');
  const parsed = nonEmpty.map((line) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new Error(`stderr line is not JSON: ${line.slice(0, 200)}`);
    }
  });
  for (const entry of parsed) {
    expect(typeof entry.level).toBe('number');
    expect(typeof entry.msg).toBe('string');
  }
  const requests = parsed.filter((e) => e.msg === 'request');
  // At least the requests this test made after init (init, unseal, mount, and the ones above).
  expect(requests.length).toBeGreaterThanOrEqual(12);
  for (const r of requests) expect(r.req_id).toEqual(expect.stringMatching(/^[0-9a-f-]{36}$/));
  expect(new Set(requests.map((r) => r.req_id)).size).toBe(requests.length);
}, 60_000);
