/**
 * `operator dr failover` and `write -wait` against a FakeVault (a real HTTP server answering
 * scripted bodies): the verdicts and refusals a real pair rarely shows on demand (a secondary
 * behind its primary, mid merkle-sync, promote refused, shares running out, a wait that times
 * out), and the progress bar on a terminal. The happy path on real processes is
 * test/e2e/cli-failover.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FakeVault, envelope } from '../../api/testing/fake-vault.js';
import { runCli } from '../testing/run-cli.js';

const DR = 'sys/replication/dr';
let fake: FakeVault;

beforeEach(async () => {
  fake = await FakeVault.start();
});
afterEach(async () => {
  await fake.close();
});

const run = (argv: string[], stdin?: string, more: { stderrTTY?: boolean } = {}) =>
  runCli(argv, { env: { TESSERA_ADDR: fake.addr, TESSERA_TOKEN: 'hvs.root' }, pollIntervalMs: 10, ...more, ...(stdin !== undefined ? { stdin } : {}) });

/** A DR secondary's status; the primary's API address is a port nothing listens on. */
function secondary(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    mode: 'secondary', state: 'stream-wals', cluster_id: 'c1', secondary_id: 'dr-east', connection_state: 'transient_failure',
    last_remote_wal: 28, primary_last_wal: 40, lag_entries: 12, lag_ms: '350',
    primaries: [{ api_address: 'http://127.0.0.1:1', cluster_address: '127.0.0.1:2', last_heartbeat: new Date(Date.now() - 5000).toISOString() }],
    ...over,
  };
}

/** Every request that is not a read: the plan must send none. */
const writes = () => fake.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path}`);

describe('operator dr failover -plan', () => {
  it('says promote would be refused when the secondary knows it is behind, with the RPO, and changes nothing', async () => {
    fake.on('GET', `${DR}/status`, { status: 200, body: envelope(secondary()) });
    const r = await run(['operator', 'dr', 'failover', '-plan', '-format=json']);
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(plan).toMatchObject({
      primary: { api_address: 'http://127.0.0.1:1', reachable: false },
      secondary: { lag_entries: 12, lag_ms: 350, primary_last_wal: 40, last_remote_wal: 28 },
      promote: { already_primary: false, passes_without_force: false, refusal: expect.stringMatching(/reported WAL index 40 but this secondary has applied 28 \(12 entries behind\)/) },
      rpo: { known_entries: 12 },
      performance_secondaries: { source: 'none', secondaries: [] },
    });
    expect(plan.secondary.last_heartbeat_age_ms).toBeGreaterThanOrEqual(4000);
    expect(plan.commands).toEqual([
      `tessera operator dr failover -address=${fake.addr} -force`,
      `tessera operator dr failback -address=${fake.addr} -old-primary=http://127.0.0.1:1`,
    ]);
    expect(plan.warnings.join('\n')).toMatch(/refused without force/);
    expect(fake.requests.length).toBeGreaterThan(0);
    expect(writes()).toEqual([]);
  });

  it('refuses the verdict mid merkle-sync even at zero lag (the node rule, not a copy)', async () => {
    fake.on('GET', `${DR}/status`, { status: 200, body: envelope(secondary({ state: 'merkle-sync', lag_entries: 0, primary_last_wal: 28 })) });
    const r = await run(['operator', 'dr', 'failover', '-plan']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Promote Without Force\s+refused: a merkle-sync is in progress$/m);
    expect(r.stdout).toMatch(/^Primary Reachable\s+no \(/m);
  });

  it('never asks for wrapped answers, whatever -wrap-ttl or TESSERA_WRAP_TTL say', async () => {
    fake.on('GET', `${DR}/status`, { status: 200, body: envelope(secondary()) });
    const r = await runCli(['operator', 'dr', 'failover', '-plan', '-wrap-ttl=5m'], { env: { TESSERA_ADDR: fake.addr, TESSERA_WRAP_TTL: '5m' } });
    expect(r.code).toBe(0);
    expect(fake.requests.map((x) => x.headers['x-vault-wrap-ttl'])).toEqual(fake.requests.map(() => undefined));
  });
});

describe('operator dr failover', () => {
  const attempt = (over: Record<string, unknown>) => ({ nonce: 'n1', started: true, progress: 0, required: 2, complete: false, encoded_token: '', pgp_fingerprint: '', otp: 'x'.repeat(28), otp_length: 28, ...over });

  it('stops when the shares run out, cancels its attempt, and never promotes', async () => {
    fake.on('GET', `${DR}/status`, { status: 200, body: envelope(secondary({ lag_entries: 0, primary_last_wal: 28 })) });
    fake.on('GET', `${DR}/secondary/generate-operation-token/attempt`, { status: 200, body: attempt({ started: false, nonce: '' }) });
    fake.on('PUT', `${DR}/secondary/generate-operation-token/attempt`, { status: 200, body: attempt({}) });
    fake.on('PUT', `${DR}/secondary/generate-operation-token/update`, { status: 200, body: attempt({ progress: 1 }) });
    fake.on('DELETE', `${DR}/secondary/generate-operation-token/attempt`, { status: 204 });
    const r = await run(['operator', 'dr', 'failover'], 'share-one\n');
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toMatch(/input ended after 1\/2 shares.*canceled/);
    expect(fake.requestsTo(`${DR}/secondary/generate-operation-token/attempt`).map((x) => x.method)).toEqual(['GET', 'PUT', 'DELETE']);
    expect(fake.requestsTo(`${DR}/secondary/promote`)).toEqual([]);
  });

  it('reports a refused promote with the way forward (-plan, -force) and moves nothing', async () => {
    fake.on('GET', `${DR}/status`, { status: 200, body: envelope(secondary()) });
    fake.on('POST', `${DR}/secondary/promote`, { status: 400, body: { errors: ['replication is still catching up: 12 entries behind'] } });
    const r = await run(['operator', 'dr', 'failover', '-dr-token=hvs.op', '-perf-secondary=http://127.0.0.1:1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/promote was refused: replication is still catching up: 12 entries behind.*-plan.*-force/);
    expect(fake.requestsTo(`${DR}/secondary/promote`).map((x) => x.body)).toEqual([{ dr_operation_token: 'hvs.op' }]);
  });
});

describe('write -wait', () => {
  it('waits for promote to leave a running primary, showing each state once', async () => {
    let polls = 0;
    fake.on('POST', `${DR}/secondary/promote`, { status: 204 });
    fake.on('GET', `${DR}/status`, () => {
      polls++;
      return { status: 200, body: envelope(polls < 3 ? secondary({ lag_entries: 0, lag_ms: '0', primary_last_wal: 28 }) : { mode: 'primary', state: 'running' }) };
    });
    const r = await run(['write', '-wait', `${DR}/secondary/promote`, 'dr_operation_token=hvs.op']);
    expect(r).toMatchObject({ code: 0, stdout: `Success! Data written to: ${DR}/secondary/promote\n` });
    expect(r.stderr).toBe('dr: mode secondary, state stream-wals, applied 28/28 lag 0 entries (0 ms)\ndr: mode primary, state running, lag 0 entries (0 ms)\nDone: dr primary running\n');
  });

  it('fails at its deadline naming where the node was; draws a bar on a terminal', async () => {
    fake.on('POST', `${DR}/secondary/enable`, { status: 204 });
    fake.on('GET', `${DR}/status`, { status: 200, body: envelope(secondary({ state: 'merkle-sync', merkle_sync_progress: { sync_total_keys: 10, sync_progress: 4 } })) });
    const r = await run(['write', '-wait', '-wait-timeout=1s', `${DR}/secondary/enable`, 'token=jwt'], undefined, { stderrTTY: true });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/dr \[[░█]+\] 4\/10 keys \| secondary merkle-sync \| lag 12 entries \(350 ms\)/);
    expect(r.stderr).toMatch(/dr did not reach dr secondary in stream-wals within 1 s \(last seen: mode secondary, state merkle-sync, synced 4\/10 keys lag 12 entries \(350 ms\)\)/);
  });

  it('is refused on any other path before anything is sent', async () => {
    const r = await run(['write', '-wait', 'secret/x', 'a=1']);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(fake.requestsTo('secret/x')).toEqual([]);
  });
});
