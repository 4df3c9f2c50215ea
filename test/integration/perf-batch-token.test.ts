/**
 * Issue 17 item 18: a batch token, a DR operation token above all, minted on a performance
 * secondary. Tokens are local to the cluster that makes them (Vault's rule: token creation is not
 * forwarded), and a batch token is stored nowhere: the secondary seals it with the key it
 * replicates from its primary, which the primary makes when it becomes a performance primary (a
 * secondary may not write it). An orphan one is then accepted by the primary's DR secondary on
 * the paths its replicated policies grant; a non-orphan one lives only while its parent, a token
 * local to the performance secondary, does, so no other cluster takes it.
 */
import { jest } from '@jest/globals';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, inSync } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

jest.setTimeout(90_000);

const CHECK_ONLY = 'path "sys/replication/dr/secondary/merkle-check" { capabilities = ["update"] }';

describe('batch tokens minted on a performance secondary', () => {
  let p: TestNode;
  let s: TestNode;
  let d: TestNode;
  beforeEach(async () => {
    [p, s, d] = await Promise.all([startTestNode(), startTestNode(), startTestNode()]);
    expect((await p.call('POST', 'sys/policies/acl/dr-check', { policy: CHECK_ONLY })).status).toBe(204);
    await joinSecondary(p, d, 'dr-batch', 'dr');
    // No batch token was ever made on the primary before this secondary joins.
    await joinSecondary(p, s, 'perf-batch', 'performance');
    await inSync(p, d, { streaming: true });
    // The secondary's enabling root token works again once its bootstrap has finished.
    await eventually(async () => expect((await s.call('GET', 'auth/token/lookup-self')).status).toBe(200), { timeoutMs: 20_000 });
  });
  afterEach(async () => {
    await Promise.all([p.stop(), s.stop(), d.stop()]);
  });

  test('an orphan batch DR operation token made on the performance secondary is accepted by the primary\'s DR secondary', async () => {
    const created = await s.call('POST', 'auth/token/create-orphan', { type: 'batch', policies: ['dr-check'], no_default_policy: true, ttl: '1h' });
    expect({ status: created.status, errors: created.body.errors }).toEqual({ status: 200, errors: undefined });
    const t = created.body.auth.client_token as string;
    expect(t.startsWith('hvb.')).toBe(true);
    expect(created.body.auth).toMatchObject({ policies: ['dr-check'], orphan: true });
    const call = (route: string, token: string) => d.call('POST', `${DR}/secondary/${route}`, { dr_operation_token: token }, { token: null });
    expect((await call('merkle-check', t)).status).toBe(200);
    // Held to its policies: promote is not granted, and nothing changes.
    expect((await call('promote', t)).status).toBe(403);
    expect((await d.call('GET', `${DR}/status`, undefined, { token: null })).body.data.mode).toBe('secondary');
  });

  test('a non-orphan batch token made there lives only with its local parent: the DR secondary refuses it', async () => {
    const created = await s.call('POST', 'auth/token/create', { type: 'batch', policies: ['dr-check'], ttl: '1h' });
    expect(created.status).toBe(200);
    const t = created.body.auth.client_token as string;
    expect((await s.call('GET', 'auth/token/lookup-self', undefined, { token: t })).body.data).toMatchObject({ type: 'batch', orphan: false });
    const r = await d.call('POST', `${DR}/secondary/merkle-check`, { dr_operation_token: t }, { token: null });
    expect({ status: r.status, errors: r.body.errors }).toEqual({ status: 403, errors: ['invalid DR operation token'] });
  });

  test('without the key yet (a primary from before it was made eagerly) the secondary answers a clear 503, and mints once the primary made one', async () => {
    // As a primary that became one before it made the key at enable: the record is absent.
    await p.node.core.store().commit([{ type: 'del', key: 'core/token/batch/key' }]);
    await inSync(p, s, { kind: 'performance' });
    const refused = await s.call('POST', 'auth/token/create-orphan', { type: 'batch', policies: ['dr-check'], ttl: '1h' });
    expect({ status: refused.status, errors: refused.body.errors }).toEqual({ status: 503, errors: [expect.stringMatching(/does not hold the batch token key yet.*create one batch token on the primary/)] });
    expect(await s.node.core.store().get('core/token/batch/key')).toBeUndefined();
    expect((await p.call('POST', 'auth/token/create-orphan', { type: 'batch', policies: ['dr-check'], ttl: '1h' })).status).toBe(200);
    await inSync(p, s, { kind: 'performance' });
    expect((await s.call('POST', 'auth/token/create-orphan', { type: 'batch', policies: ['dr-check'], ttl: '1h' })).status).toBe(200);
  });
});
