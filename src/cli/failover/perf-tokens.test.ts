/**
 * One token per performance secondary in `operator dr failover`: the flag's forms and mistakes, and
 * a failover against FakeVaults (real HTTP servers) whose two performance secondaries each accept
 * only their own token, as real ones do (their tokens are local).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { FakeVault, envelope, type RecordedRequest } from '../../api/testing/fake-vault.js';
import { isTesseraError } from '../../core/errors.js';
import { runCli } from '../testing/run-cli.js';
import { parsePerfTokens, perfTokenFor } from './perf-tokens.js';

const A = 'http://10.0.0.7:8200';
const B = 'http://10.0.0.8:8200';

describe('parsePerfTokens', () => {
  it('takes a token per secondary address, and one without an address for the rest', () => {
    const t = parsePerfTokens([`${A}=hvs.a`, `${B}/=hvs.b=x`], [A, `${B}/`]);
    expect([perfTokenFor(t, A), perfTokenFor(t, `${A}/`), perfTokenFor(t, B)]).toEqual(['hvs.a', 'hvs.a', 'hvs.b=x']);
    expect(perfTokenFor(parsePerfTokens([`${A}=hvs.a`], [A, B]), B)).toBeUndefined();
    const old = parsePerfTokens(['hvs.all'], [A]);
    expect([perfTokenFor(old, A), perfTokenFor(old, B)]).toEqual(['hvs.all', 'hvs.all']);
    const mixed = parsePerfTokens(['hvs.rest', `${B}=hvs.b`], [A, B]);
    expect([perfTokenFor(mixed, A), perfTokenFor(mixed, B)]).toEqual(['hvs.rest', 'hvs.b']);
  });

  it.each([
    [['hvs.one', 'hvs.two'], /without an address may be given once/],
    [[`http://10.0.0.9:8200=hvs.x`], /names http:\/\/10\.0\.0\.9:8200, which is not a -perf-secondary/],
    [[`${A}=hvs.a`, `${A}=hvs.b`], /given twice for http:\/\/10\.0\.0\.7:8200/],
    [[`${A}=`], /for http:\/\/10\.0\.0\.7:8200 is empty/],
    [[''], /is empty/],
  ])('refuses %j as a usage error', (values, why) => {
    let error: unknown;
    try {
      parsePerfTokens(values, [A, B]);
    } catch (e) {
      error = e;
    }
    expect(isTesseraError(error) && error.code === 'invalid_request').toBe(true);
    expect((error as Error).message).toMatch(why);
  });
});

describe('operator dr failover with two performance secondaries', () => {
  const fakes: FakeVault[] = [];
  afterEach(async () => {
    for (const f of fakes.splice(0)) await f.close();
  });
  const NEW = 'https://10.0.0.1:8201';

  /** An already-promoted DR primary that is the new performance primary. */
  async function newPrimary(): Promise<FakeVault> {
    const f = await FakeVault.start();
    fakes.push(f);
    f.on('GET', 'sys/replication/dr/status', { status: 200, body: envelope({ mode: 'primary', state: 'running', primary_cluster_addr: 'https://10.0.0.1:8201' }) });
    f.on('GET', 'sys/health', { status: 200, body: { initialized: true, sealed: false, standby: false } });
    f.on('GET', 'sys/replication/performance/status', {
      status: 200, body: envelope({ mode: 'primary', state: 'running', primary_cluster_addr: NEW, known_secondaries: ['perf-a', 'perf-b'] }),
    });
    return f;
  }

  /** A performance secondary that answers only `token`, and follows NEW once update-primary names it. */
  async function perfSecondary(id: string, token: string): Promise<FakeVault> {
    const f = await FakeVault.start();
    fakes.push(f);
    let from = 'https://10.0.0.2:8201';
    const own = (reply: () => { status: number; body?: unknown }) => (req: RecordedRequest) =>
      req.headers['x-vault-token'] === token ? reply() : { status: 403, body: { errors: ['permission denied'] } };
    f.on('GET', 'sys/replication/performance/status', own(() => ({ status: 200, body: envelope({ mode: 'secondary', state: 'stream-wals', secondary_id: id, primary_cluster_addr: from }) })));
    for (const method of ['POST', 'PUT']) {
      f.on(method, 'sys/replication/performance/secondary/update-primary', (req) => own(() => {
        from = ((req.body as { update_primary_addrs: string[] }).update_primary_addrs)[0]!;
        return { status: 204 };
      })(req));
    }
    return f;
  }

  const failover = (p: FakeVault, args: string[]) =>
    runCli(['operator', 'dr', 'failover', `-address=${p.addr}`, '-format=json', ...args], { env: { TESSERA_TOKEN: 'hvs.root' }, pollIntervalMs: 10 });
  const updates = (f: FakeVault) => f.requestsTo('sys/replication/performance/secondary/update-primary').map((r) => r.headers['x-vault-token']);

  it('gives each secondary its own token: both move, exit 0', async () => {
    const p = await newPrimary();
    const [a, b] = [await perfSecondary('perf-a', 'hvs.a'), await perfSecondary('perf-b', 'hvs.b')];
    const r = await failover(p, [`-perf-secondary=${a.addr}`, `-perf-token=${a.addr}=hvs.a`, `-perf-secondary=${b.addr}`, `-perf-token=${b.addr}=hvs.b`]);
    expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    const summary = JSON.parse(r.stdout);
    expect(summary.steps.map((s: { step: string; outcome: string }) => [s.step, s.outcome])).toEqual([['promote', 'skipped'], ['update-primary', 'done'], ['update-primary', 'done']]);
    expect(summary.not_updated_ids).toEqual([]);
    expect([updates(a), updates(b)]).toEqual([['hvs.a'], ['hvs.b']]);
  });

  it('keeps the old single form for one secondary; a token refused by another secondary says how to give it its own', async () => {
    const p = await newPrimary();
    const [a, b] = [await perfSecondary('perf-a', 'hvs.a'), await perfSecondary('perf-b', 'hvs.b')];
    const one = await failover(p, [`-perf-secondary=${a.addr}`, '-perf-token=hvs.a']);
    expect(one.code).toBe(0);
    expect(updates(a)).toEqual(['hvs.a']);
    const shared = await failover(p, [`-perf-secondary=${b.addr}`, '-perf-token=hvs.a']);
    expect(shared.code).toBe(1);
    expect(JSON.parse(shared.stdout).steps[1].detail).toContain(`give it -perf-token=${b.addr}=<token>`);
  });

  it('refuses a token for an address that is not a -perf-secondary before sending anything', async () => {
    const p = await newPrimary();
    const a = await perfSecondary('perf-a', 'hvs.a');
    const r = await failover(p, [`-perf-secondary=${a.addr}`, '-perf-token=http://10.0.0.9:8200=hvs.a']);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(/not a -perf-secondary/);
    expect([p.requests, a.requests]).toEqual([[], []]);
  });
});
