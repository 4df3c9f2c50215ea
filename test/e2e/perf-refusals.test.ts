/**
 * Forbidden conditions of the replication API (spec section 7) and bad paths-filter input, for the
 * performance kind, on real processes: each is a clear 4xx in Vault's {"errors":[...]} shape and
 * changes nothing. "Nothing" is checked on both ends after every refusal: the primary's WAL
 * position and Merkle root (a refused call commits nothing), its known secondaries and filter, and
 * the secondary's role and primary.
 */
import { eventually, PERF, replStatus, secondaryToken, startCluster, useHarness, vault, waitInSync, type Body } from '../harness/index.js';

const h = useHarness();
const SLOW_START = { readyTimeoutMs: 45_000 };
const FILTER = `${PERF}/primary/paths-filter`;

/** The fields of a performance status that no refused call may move (heartbeat times do move). */
function stable(st: Body): Body {
  const pick = ['mode', 'cluster_id', 'known_secondaries', 'last_wal', 'merkle_root', 'primary_cluster_addr', 'secondary_id', 'known_primary_cluster_addrs', 'last_remote_wal'];
  return Object.fromEntries(pick.filter((k) => st[k] !== undefined).map((k) => [k, st[k]]));
}

test('forbidden performance operations and bad paths filters are a clear 4xx and change nothing', async () => {
  // The enabling root token does not survive the activation: startCluster makes root there from the primary's shares.
  const c = await startCluster(h, {
    node: SLOW_START,
    performance: [{ id: 'perf-east', filter: { mode: 'deny', paths: ['team-a'] } }],
    beforeEnable: async ({ primary }) => {
      const v = primary.vault();
      expect((await v.post('sys/mounts/secret', { type: 'kv', options: { version: '1' } })).status).toBe(204);
      expect((await v.post('sys/namespaces/team-a')).status).toBe(200);
      expect((await v.post('sys/mounts/here', { type: 'kv', options: { version: '1' }, local: true })).status).toBe(204);
    },
  });
  const p = c.primary;
  const s = c.performance[0]!;
  const pk = { rootToken: p.rootToken };
  const pv = vault(p.apiAddr, pk.rootToken);
  const sv = vault(s.apiAddr, s.rootToken);
  // An unused activation token, for the calls that must refuse one.
  const spareJwt = await secondaryToken(p.apiAddr, pk.rootToken, 'perf-spare', undefined, 'performance');
  const synced = await waitInSync(p.apiAddr, s.apiAddr, 20_000, 'performance');
  const before = { p: stable(synced.primary), s: stable(synced.secondary) };
  expect(before.p.known_secondaries).toEqual(['perf-east', 'perf-spare']);
  const filterBefore = (await pv.get(`${FILTER}/perf-east`)).body.data;
  expect(filterBefore).toEqual({ mode: 'deny', paths: ['team-a'] });

  const cases: Array<[string, () => Promise<{ status: number; body: Body }>, RegExp]> = [
    // Paths filters: unknown ids, bad modes, paths that are not replicated mounts or namespaces.
    ['filter for an unknown id', () => pv.post(`${FILTER}/perf-west`, { mode: 'deny', paths: ['secret'] }), /no performance secondary "perf-west" is known/],
    ['filter with a bad mode', () => pv.post(`${FILTER}/perf-east`, { mode: 'maybe', paths: ['secret'] }), /mode must be "allow" or "deny"/],
    ['filter naming no mount', () => pv.post(`${FILTER}/perf-east`, { mode: 'deny', paths: ['no-such-mount'] }), /not a replicated mount or namespace/],
    ['filter naming a local mount', () => pv.post(`${FILTER}/perf-east`, { mode: 'deny', paths: ['here'] }), /not a replicated mount or namespace/],
    ['filter with a traversal', () => pv.post(`${FILTER}/perf-east`, { mode: 'deny', paths: ['secret', '../x'] }), /segment/],
    ['filter whose paths are not a list', () => pv.post(`${FILTER}/perf-east`, { mode: 'deny', paths: 7 }), /paths/],
    ['filter set on the secondary', () => sv.post(`${FILTER}/perf-east`, { mode: 'deny', paths: ['secret'] }), /performance mode: secondary/],
    // Operations from a state that does not allow them.
    ['secondary/enable on a primary', () => pv.post(`${PERF}/secondary/enable`, { token: spareJwt }), /primary/],
    ['secondary/promote on a primary', () => pv.post(`${PERF}/secondary/promote`, {}), /primary/],
    ['secondary/update-primary on a primary', () => pv.post(`${PERF}/secondary/update-primary`, { update_primary_addrs: ['127.0.0.1:1'] }), /primary/],
    ['primary/enable on a secondary', () => sv.post(`${PERF}/primary/enable`, {}), /secondary/],
    ['primary/secondary-token on a secondary', () => sv.post(`${PERF}/primary/secondary-token`, { id: 'x' }), /secondary/],
    // Spec section 7: both token and update_primary_addrs; a reused id; outside the root namespace.
    ['update-primary with token and addresses', () => sv.post(`${PERF}/secondary/update-primary`, { token: spareJwt, update_primary_addrs: ['127.0.0.1:1'] }), /token.*update_primary_addrs|update_primary_addrs.*token/],
    ['a second activation token for a known id', () => pv.post(`${PERF}/primary/secondary-token`, { id: 'perf-east' }), /perf-east/],
    ['a restricted endpoint in a namespace', () => pv.post(`${PERF}/primary/secondary-token`, { id: 'ns-one' }, { headers: { 'X-Vault-Namespace': 'team-a' } }), /namespace/],
    ['a filter set in a namespace', () => pv.post(`${FILTER}/perf-east`, { mode: 'allow', paths: [] }, { headers: { 'X-Vault-Namespace': 'team-a' } }), /namespace/],
  ];
  for (const [what, call, why] of cases) {
    const r = await call();
    expect({ what, status: r.status, error: r.body?.errors?.[0] }).toEqual({ what, status: 400, error: expect.stringMatching(why) });
    // Nothing changed on either end: no WAL entry, the same secondaries, the same filter.
    expect({ what, p: stable(await replStatus(p.apiAddr, 'performance')) }).toEqual({ what, p: before.p });
    expect({ what, s: stable(await replStatus(s.apiAddr, 'performance')) }).toEqual({ what, s: before.s });
    expect((await pv.get(`${FILTER}/perf-east`)).body.data).toEqual(filterBefore);
  }
  // Deleting a filter that does not exist is not an error (a revoked secondary's leftover filter
  // can be cleaned up), and it commits nothing either.
  expect((await pv.delete(`${FILTER}/perf-west`)).status).toBe(204);
  expect(stable(await replStatus(p.apiAddr, 'performance'))).toEqual(before.p);
  // The secondary still follows its primary and serves what the filter lets through.
  expect((await pv.put('secret/after', { value: 'x' })).status).toBe(204);
  await eventually(async () => expect((await sv.get('secret/after')).body?.data).toEqual({ value: 'x' }), { timeoutMs: 10_000 });
}, 90_000);
