/**
 * Issue 27 item 4, under replication: a token's cubbyhole is in the token's (local) storage class,
 * so a DR secondary holds the primary's cubbyholes as it holds its tokens, a performance secondary
 * never receives them, and a performance secondary's own token keeps its cubbyhole there, written
 * locally (never forwarded to the primary).
 */
import { cubbyholeKey } from '../../src/vault/cubbyhole.js';
import { hashToken } from '../../src/vault/token-keys.js';
import { startCluster, useHarness, waitInSync, type Cluster, type InProcessNode } from '../harness/index.js';

const h = useHarness();
let c: Cluster<InProcessNode>;
beforeAll(async () => {
  c = await startCluster(h, { node: { inProcess: true }, dr: ['dr'], performance: ['perf'] });
}, 60_000);

const held = async (n: InProcessNode, token: string): Promise<boolean> => (await n.node.core.store().get(cubbyholeKey(hashToken(token)))) !== undefined;

test('DR holds the primary\'s cubbyholes, a performance secondary never receives them; its own stay there', async () => {
  const [dr, perf] = [c.dr[0]!, c.performance[0]!];
  expect((await c.primary.call('POST', 'cubbyhole/k', { v: 'primary' })).status).toBe(204);
  expect((await perf.call('POST', 'cubbyhole/k', { v: 'perf' })).status).toBe(204);
  expect((await c.primary.call('POST', 'sys/policies/acl/after', { policy: 'path "x" { capabilities = ["read"] }' })).status).toBe(204);
  await waitInSync(c.primary.apiAddr, dr.apiAddr, 20_000, 'dr');
  await waitInSync(c.primary.apiAddr, perf.apiAddr, 20_000, 'performance');
  expect(await held(dr, c.primary.rootToken)).toBe(true);
  expect(await held(perf, c.primary.rootToken)).toBe(false);
  expect(await held(perf, perf.rootToken)).toBe(true);
  expect(await held(c.primary, perf.rootToken)).toBe(false);
  expect((await perf.call('GET', 'cubbyhole/k')).body.data).toEqual({ v: 'perf' });
  expect((await c.primary.call('GET', 'cubbyhole/k')).body.data).toEqual({ v: 'primary' });
}, 60_000);
