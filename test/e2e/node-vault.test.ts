/**
 * A real Vault client (node-vault, unmodified) drives a real non-dev node: init, unseal, mounts,
 * KV v2 write, read and list, token create and lookup-self, and response wrapping with unwrap.
 */
import vaultFactory from 'node-vault';
import { useHarness, type StartedNode } from '../harness/index.js';

const h = useHarness();
let node: StartedNode;
/** Set by the first test, which initialises the node. */
let rootTokenForNext = '';

beforeAll(async () => {
  node = await h.startNode();
}, 30_000);

afterAll(async () => {
  await node?.stop();
}, 20_000);

test('node-vault: init, unseal, mount, kv v2, tokens, wrapping', async () => {
  const client = vaultFactory({ apiVersion: 'v1', endpoint: node.apiAddr });

  expect(await client.initialized()).toEqual({ initialized: false });
  const init = await client.init({ secret_shares: 1, secret_threshold: 1 });
  expect(init.keys).toHaveLength(1);
  expect(init.keys_base64).toHaveLength(1);
  expect(init.root_token).toMatch(/^hvs\./);
  const rootToken: string = init.root_token;
  client.token = rootToken;

  const unsealed = await client.unseal({ key: init.keys[0] });
  expect(unsealed).toMatchObject({ sealed: false, t: 1, n: 1, progress: 0 });
  expect(await client.status()).toMatchObject({ initialized: true, sealed: false });

  // Mounts: enable KV v2 at kv/ and see it listed.
  await client.mount({ mount_point: 'kv', type: 'kv', options: { version: '2' } });
  const mounts = await client.mounts();
  expect(mounts.data['kv/']).toMatchObject({ type: 'kv', options: { version: '2' } });

  // KV v2 through the generic write/read.
  const written = await client.write('kv/data/x', { data: { password: 'p1', user: 'app' } });
  expect(written.data).toMatchObject({ version: 1, destroyed: false });
  const read = await client.read('kv/data/x');
  expect(read.data.data).toEqual({ password: 'p1', user: 'app' });
  expect(read.data.metadata).toMatchObject({ version: 1 });
  expect((await client.list('kv/metadata/')).data.keys).toEqual(['x']); // the LIST verb
  await expect(client.read('kv/data/missing')).rejects.toMatchObject({ response: { statusCode: 404 } });

  // tokenCreate makes the client use the new token (node-vault's tokenSource), so lookup-self
  // reports the created token.
  const created = await client.tokenCreate({ policies: ['default'], ttl: '1h', meta: { app: 'e2e' } });
  const childToken: string = created.auth.client_token;
  expect(childToken).toMatch(/^hvs\./);
  expect(created.auth.policies).toContain('default');
  expect(client.token).toBe(childToken);
  const self = await client.tokenLookupSelf();
  expect(self.data).toMatchObject({ id: childToken, meta: { app: 'e2e' } });
  expect(self.data.policies).toContain('default');
  expect(self.data.ttl).toBeGreaterThan(3500);
  // Renewal (issue 27): renew-self as the child, renew by token as root.
  expect((await client.tokenRenewSelf({ increment: '2h' })).auth).toMatchObject({ client_token: childToken, lease_duration: 7200, renewable: true });
  client.token = rootToken;
  expect((await client.tokenRenew({ token: childToken, increment: 600 })).auth.lease_duration).toBe(600);
  client.token = rootToken; // tokenRenew, like tokenCreate, makes the client use the token it renewed
  expect((await client.tokenLookup({ token: childToken })).data.ttl).toBeLessThanOrEqual(600);

  // Response wrapping: the create answer is wrapped; unwrap hands out the token exactly once.
  const wrapped = await client.tokenCreate({ policies: ['default'], requestOptions: { headers: { 'X-Vault-Wrap-TTL': '60s' } } });
  expect(wrapped.auth).toBeNull();
  expect(wrapped.wrap_info).toMatchObject({ ttl: 60, creation_path: 'auth/token/create' });
  const wrapToken: string = wrapped.wrap_info.token;
  expect(client.token).toBe(rootToken);

  const unwrapped = await client.unwrap({ token: wrapToken });
  const wrappedChild: string = unwrapped.auth.client_token;
  expect(wrappedChild).toMatch(/^hvs\./);
  expect(wrappedChild).not.toBe(childToken);
  const asChild = vaultFactory({ apiVersion: 'v1', endpoint: node.apiAddr, token: wrappedChild });
  expect((await asChild.tokenLookupSelf()).data.id).toBe(wrappedChild);
  await expect(client.unwrap({ token: wrapToken })).rejects.toMatchObject({ response: { body: { errors: expect.any(Array) } } });
  rootTokenForNext = rootToken;
}, 30_000);

test('node-vault: a spent wrapping token answers 400 "wrapping token is not valid or does not exist", as Vault does', async () => {
  const client = vaultFactory({ apiVersion: 'v1', endpoint: node.apiAddr, token: rootTokenForNext });
  const wrapped = await client.tokenCreate({ requestOptions: { headers: { 'X-Vault-Wrap-TTL': '5m' } } });
  const wrapToken: string = wrapped.wrap_info.token;
  expect((await client.unwrap({ token: wrapToken })).auth.client_token).toMatch(/^hvs\./);
  // Clients (e.g. Quarkus' vault client) branch on this 400 to report a stolen or expired token.
  const again: { message?: string; response?: { statusCode: number } } = await client.unwrap({ token: wrapToken }).then(
    () => ({}),
    (e: { message: string; response: { statusCode: number } }) => e,
  );
  expect(again.message).toBe('wrapping token is not valid or does not exist');
  expect(again.response?.statusCode).toBe(400);
}, 30_000);

test('node-vault: rotate (issue 27 item 3); what was written before stays readable', async () => {
  const client = vaultFactory({ apiVersion: 'v1', endpoint: node.apiAddr, token: rootTokenForNext });
  const before = await client.read('sys/key-status');
  await client.rotate();
  const after = await client.read('sys/key-status');
  expect(after.data.term).toBe(before.data.term + 1);
  expect(after.term).toBe(after.data.term);
  expect((await client.read('kv/data/x')).data.data).toEqual({ password: 'p1', user: 'app' });
});
