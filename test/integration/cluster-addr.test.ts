/**
 * Cluster addresses in Vault's form (WIRE.md section 8), on in-process nodes with real gRPC, for
 * both kinds: `primary_cluster_addr` and `update_primary_addrs` are accepted as `https://host:port`
 * and as `host:port`, status answers `https://host:port`, a malformed address is a 400 that changes
 * nothing, and update-primary says what each address it probed did.
 */
import { KINDS } from '../../src/core/replication/index.js';
import { activateSecondary, freePort, generateRoot } from '../harness/dr.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, PERF, drOperationToken, inSync, replStatus, secondaryToken, type Kind } from '../support/dr.js';
import { startTestNode, type TestNode, type TestNodeOptions } from '../support/in-process.js';

const nodes: TestNode[] = [];
async function node(opts: TestNodeOptions = {}): Promise<TestNode> {
  const n = await startTestNode(opts);
  nodes.push(n);
  return n;
}
afterEach(async () => {
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

const bare = (vaultForm: string): string => vaultForm.replace(/^https:\/\//, '');

/** update-primary of `kind` on secondary `s` (DR: authorized by an operation token of `s`). */
async function updatePrimary(s: TestNode, kind: Kind, auth: string | undefined, body: Record<string, unknown>) {
  return kind === 'dr'
    ? s.call('POST', `${DR}/secondary/update-primary`, { dr_operation_token: auth, ...body }, { token: null })
    : s.call('POST', `${PERF}/secondary/update-primary`, body);
}

describe.each(KINDS)('%s replication', (kind) => {
  const base = kind === 'dr' ? DR : PERF;
  test('status answers in Vault\'s form; update_primary_addrs takes https://host:port and host:port', async () => {
    const p = await node();
    const s = await node();
    await joinSecondary(p, s, 'east', kind);
    const ps = await replStatus(p, kind);
    expect(ps.primary_cluster_addr).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const synced = await inSync(p, s, { kind });
    expect(synced.primary_cluster_addr).toBe(ps.primary_cluster_addr);
    expect(synced.known_primary_cluster_addrs).toEqual([ps.primary_cluster_addr]);
    expect(synced.primaries[0].cluster_address).toBe(ps.primary_cluster_addr);
    const auth = kind === 'dr' ? await drOperationToken(s, p.unsealKeys.slice(0, 2)) : undefined;

    // Vault's form, as status shows it: accepted, probed, recorded.
    expect((await updatePrimary(s, kind, auth, { update_primary_addrs: [ps.primary_cluster_addr] })).status).toBe(204);
    const again = await inSync(p, s, { kind });
    expect(again).toMatchObject({ primary_cluster_addr: ps.primary_cluster_addr, known_primary_cluster_addrs: [ps.primary_cluster_addr] });
    // The bare form names the same primary.
    expect((await updatePrimary(s, kind, auth, { update_primary_addrs: [bare(ps.primary_cluster_addr)] })).status).toBe(204);
    expect(await inSync(p, s, { kind })).toMatchObject({ primary_cluster_addr: ps.primary_cluster_addr, known_primary_cluster_addrs: [ps.primary_cluster_addr] });
  });

  test('primary_cluster_addr in Vault\'s form is what secondaries are told; a malformed address is a 400 that changes nothing', async () => {
    const port = await freePort();
    const p = await node({ clusterAddr: `127.0.0.1:${port}` });
    const s = await node();
    for (const bad of ['http://127.0.0.1:8201', '127.0.0.1', 'https://127.0.0.1:8201/v1', 'https://']) {
      const r = await p.call('POST', `${base}/primary/enable`, { primary_cluster_addr: bad });
      expect({ status: r.status, error: r.body.errors?.[0] }).toEqual({ status: 400, error: expect.stringContaining('expected "https://host:port" or "host:port"') });
      expect((await replStatus(p, kind)).mode).toBe('disabled');
    }
    // The node's own cluster port, written as the config writes cluster_addr.
    const own = `https://127.0.0.1:${port}`;
    expect((await p.call('POST', `${base}/primary/enable`, { primary_cluster_addr: own })).status).toBe(204);
    expect((await replStatus(p, kind)).primary_cluster_addr).toBe(own);
    await activateSecondary(s.apiAddr, s.rootToken, await secondaryToken(p, 'west', undefined, kind), kind);
    // The token that enabled a performance secondary does not survive its activation.
    if (kind === 'performance') s.rootToken = await generateRoot(s.apiAddr, p.unsealKeys);
    expect(await inSync(p, s, { kind })).toMatchObject({ primary_cluster_addr: own, known_primary_cluster_addrs: [own] });

    const auth = kind === 'dr' ? await drOperationToken(s, p.unsealKeys.slice(0, 2)) : undefined;
    const before = await replStatus(s, kind);
    const refused = await updatePrimary(s, kind, auth, { update_primary_addrs: [own, 'http://127.0.0.1:1'] });
    expect({ status: refused.status, error: refused.body.errors?.[0] }).toEqual({ status: 400, error: expect.stringContaining('update_primary_addrs: "http://127.0.0.1:1" is not a cluster address') });
    expect(await replStatus(s, kind)).toMatchObject({ primary_cluster_addr: before.primary_cluster_addr, known_primary_cluster_addrs: before.known_primary_cluster_addrs });
  });
});

test('update-primary says what each probed address did, in Vault\'s form, instead of "did not answer"', async () => {
  const [p, s, q] = [await node(), await node(), await node()];
  await joinSecondary(p, s, 'east', 'dr');
  // q is a DR primary of another set: it answers on its cluster port, but not as a primary of this set.
  expect((await q.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
  const other = (await replStatus(q, 'dr')).primary_cluster_addr as string;
  const apiPort = `https://${new URL(p.apiAddr).host}`;
  const t = await drOperationToken(s, p.unsealKeys.slice(0, 2));
  const r = await updatePrimary(s, 'dr', t, { update_primary_addrs: [other, apiPort] });
  expect(r.status).toBe(400);
  const msg = r.body.errors[0] as string;
  expect(msg).not.toMatch(/did not answer/);
  for (const a of [other, apiPort]) expect(msg).toContain(`${a} could not be reached as a primary of this replication set (connection or TLS handshake failed): `);

  // The primary answers, and refuses a revoked secondary: said as such.
  expect((await p.call('POST', `${DR}/primary/revoke-secondary`, { id: 'east' })).status).toBe(204);
  const primary = (await replStatus(p, 'dr')).primary_cluster_addr as string;
  const refused = await updatePrimary(s, 'dr', t, { update_primary_addrs: [primary] });
  expect(refused.status).toBe(400);
  expect(refused.body.errors[0]).toContain(`${primary} answered and refused this secondary: `);
});
