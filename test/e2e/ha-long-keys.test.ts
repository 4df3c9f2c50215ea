/**
 * One tenant's long keys on an HA cluster on PostgreSQL (issue 26 item 9), on real processes: two
 * nodes with `ha_enabled` (lease 2 s) on a private PostgreSQL (test/harness/ha.ts). A namespace tenant with a token for
 * its own KV mount writes a 3,000-byte and a 9,000-byte key once a second while four writers (three
 * through the active node, one relayed by the standby) write ordinary keys: the long keys are
 * answered 400 with Vault's "put failed due to key being too large", every other write 200, the
 * lease's epoch never moves and the active node stays active. Before the key contract, each long
 * key failed its whole group-commit batch in PostgreSQL ("index row size 3088 exceeds btree version
 * 4 maximum 2704"): the active node failed closed and stepped down, its batch neighbours got 503.
 */
import { randomBytes } from 'node:crypto';
import { jest } from '@jest/globals';
import { eventually, startHaCluster, useHarness, vault } from '../harness/index.js';

jest.setTimeout(180_000);

const h = useHarness();

/** Writes distinct keys through `addr` until stopped; counts the statuses it was answered. */
function writer(addr: string, token: string, name: string) {
  const v = vault(addr, token);
  const statuses = new Map<number, number>();
  let stopping = false;
  const run = (async () => {
    for (let i = 0; !stopping; i++) {
      const r = await v.put(`secret/data/${name}/k${i}`, { data: { v: randomBytes(16).toString('hex') } });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
  })();
  return {
    statuses,
    async stop() {
      stopping = true;
      await run;
    },
  };
}

const randomKey = (bytes: number): string => randomBytes(bytes).toString('base64url').slice(0, bytes);

it('a tenant writing 3,000- and 9,000-byte keys once a second gets 400s; nobody else sees a 503 and the epoch never moves', async () => {
  const c = await startHaCluster(h, { nodes: 2, mountKv2: true });
  const active = await c.active();
  const [standby] = (await c.standbys()) as [typeof active];

  // The tenant: a namespace, its own KV mount, and a token whose policy grants only that mount.
  const root = vault(active.apiAddr, c.rootToken);
  const ns = { headers: { 'X-Vault-Namespace': 'tenant' } };
  expect((await root.post('sys/namespaces/tenant', {})).status).toBeLessThan(300);
  expect((await root.post('sys/mounts/kv', { type: 'kv-v2' }, ns)).status).toBe(204);
  expect((await root.put('sys/policies/acl/own', { policy: 'path "kv/*" { capabilities = ["create", "update", "read"] }' }, ns)).status).toBe(204);
  const created = await root.post('auth/token/create', { policies: ['own'] }, ns);
  expect(created.status).toBe(200);
  const tenant = vault(active.apiAddr, created.body.auth.client_token as string);
  await eventually(async () => expect((await tenant.put('kv/data/ok', { data: { v: 1 } }, ns)).status).toBe(200), { timeoutMs: 10_000 });

  const epochBefore = await c.epoch();
  const writers = [
    writer(active.apiAddr, c.rootToken, 'a'),
    writer(active.apiAddr, c.rootToken, 'b'),
    writer(active.apiAddr, c.rootToken, 'c'),
    writer(standby.apiAddr, c.rootToken, 'relayed'),
  ];
  const longStatuses: Array<{ bytes: number; status: number; error: string }> = [];
  for (let second = 0; second < 6; second++) {
    const started = Date.now();
    const answers = await Promise.all(
      [3_000, 9_000].map(async (bytes) => {
        const r = await tenant.put(`kv/data/${randomKey(bytes)}`, { data: { v: 'x' } }, ns);
        return { bytes, status: r.status, error: String(r.body?.errors?.[0] ?? '') };
      }),
    );
    longStatuses.push(...answers);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 - (Date.now() - started))));
  }
  for (const w of writers) await w.stop();

  expect(longStatuses.filter((a) => a.status !== 400)).toEqual([]);
  for (const a of longStatuses) expect(a.error).toMatch(/^put failed due to key being too large; got \d+ bytes, max: 2048 bytes$/);
  for (const w of writers) {
    expect([...w.statuses.keys()]).toEqual([200]);
    expect(w.statuses.get(200)).toBeGreaterThan(5);
  }
  expect(await c.epoch()).toBe(epochBefore);
  expect(await c.active()).toBe(active);
  expect((await vault(active.apiAddr).get('sys/health')).status).toBe(200);
  // The tenant's ordinary writes still work.
  expect((await tenant.put('kv/data/after', { data: { v: 2 } }, ns)).status).toBe(200);
});
