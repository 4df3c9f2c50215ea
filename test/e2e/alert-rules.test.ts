/**
 * deploy/alerts.yml against what real nodes expose: process nodes (a DR secondary and a
 * performance secondary of one primary; a second primary with a 50-entry WAL bound and a DR
 * secondary) are driven into each condition, `/v1/sys/metrics?format=prometheus` is scraped from
 * every node, and the scraped samples become a promtool unit test (input series held at the
 * scraped value; `up` is 0 for a node whose scrape failed). Each alert must fire on the scrape
 * that shows its condition, with the labels that name the node and secondary, and none may fire
 * on the healthy scrape.
 *
 * Where the condition cannot be made for real in a test, or not quickly (5 minutes of lag, 50000
 * entries behind, a merkle-sync that stalls, 30 s without a heartbeat from the primary), the series
 * are the scraped ones and only the value is set by the test, as said at each place.
 * `tessera_replication_verification_mismatch` comes from continuous verification: used as scraped
 * when the DR secondary exposes it, else added by hand.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { eventually, repoRoot, startCluster, useHarness, vault, waitInSync } from '../harness/index.js';

const h = useHarness();
const RULES = join(repoRoot, 'deploy', 'alerts.yml');
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';
const SLOW_START = { readyTimeoutMs: 45_000 };

type Samples = Map<string, string>; // series (with instance and job) -> value
interface Alert {
  readonly labels: Record<string, string>;
}

/** One scrape of one node: its tessera_replication_* samples, and `up`. */
async function scrape(instance: string, apiAddr: string, token: string): Promise<Samples> {
  const out: Samples = new Map();
  const extra = `instance="${instance}",job="tessera"`;
  let text: string | undefined;
  try {
    const r = await vault(apiAddr, token).get('sys/metrics?format=prometheus');
    if (r.status === 200) text = r.text;
  } catch {
    // Connection refused: the node is down, which is what `up` says.
  }
  out.set(`up{${extra}}`, text === undefined ? '0' : '1');
  for (const line of (text ?? '').split('\n')) {
    const m = /^(tessera_replication_[a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const [, name, labels, value] = m as unknown as [string, string, string | undefined, string];
    out.set(`${name}{${labels ? `${labels},` : ''}${extra}}`, value);
  }
  return out;
}

/** The labels of a series string, e.g. 'up{instance="a",job="tessera"}' -> { instance: 'a', job: 'tessera' }. */
const labelsOf = (series: string): Record<string, string> => Object.fromEntries([...series.matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]));

const merge = (...all: Samples[]): Samples => new Map(all.flatMap((s) => [...s]));

/** The series of `name` whose labels include `has`, e.g. pick(s, 'tessera_replication_mode', 'mode="primary"'). */
function pick(s: Samples, name: string, ...has: string[]): string[] {
  return [...s.keys()].filter((k) => k.startsWith(`${name}{`) && has.every((h) => k.includes(h)));
}

/** The annotations of one rule, read from deploy/alerts.yml (they are plain quoted strings there). */
function annotationsOf(yml: string, alert: string): Record<string, string> {
  const block = yml.split(/\n\s+- alert: /).find((b) => b.startsWith(`${alert}\n`));
  if (!block) throw new Error(`no rule ${alert} in deploy/alerts.yml`);
  const ann = block.slice(block.indexOf('annotations:'));
  return Object.fromEntries([...ann.matchAll(/^\s+([a-z_]+): (".*")$/gm)].map((m) => [m[1] as string, JSON.parse(m[2] as string) as string]));
}

function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` }));
  });
}

/**
 * promtool unit test: every series held at its scraped value for 20 minutes (or the timeline
 * given), then at 15 minutes `alert` must have fired exactly as `expected` (none when empty).
 */
async function expectAlerts(samples: Samples, alert: string, expected: readonly Alert[], timeline: Record<string, string> = {}): Promise<void> {
  const yml = await readFile(RULES, 'utf8');
  const annotations = annotationsOf(yml, alert);
  const severity = /severity: "([a-z]+)"/.exec(yml.split(/\n\s+- alert: /).find((b) => b.startsWith(`${alert}\n`)) ?? '')?.[1] ?? '';
  const test = {
    rule_files: [RULES],
    evaluation_interval: '1m',
    tests: [{
      interval: '1m',
      input_series: [...samples].map(([series, value]) => ({ series, values: timeline[series] ?? `${value}+0x20` })),
      alert_rule_test: [{
        eval_time: '15m',
        alertname: alert,
        exp_alerts: expected.map((a) => ({ exp_labels: { ...a.labels, severity }, exp_annotations: annotations })),
      }],
    }],
  };
  const file = join(await h.tempDir('promtool-'), `${alert}.json`);
  // JSON is YAML: promtool reads it as its test file.
  await writeFile(file, JSON.stringify(test, null, 1));
  const r = await run(PROMTOOL, ['test', 'rules', file]);
  expect({ alert, code: r.code, out: r.code === 0 ? 'SUCCESS' : r.out }).toEqual({ alert, code: 0, out: 'SUCCESS' });
}

const ALERTS = [
  'TesseraNodeUnavailable', 'TesseraReplicationSecondaryDisconnected', 'TesseraReplicationPrimaryUnreachable', 'TesseraReplicationLagHigh',
  'TesseraReplicationLagEntriesHigh', 'TesseraReplicationWalHeadroomLow', 'TesseraReplicationVerificationMismatch', 'TesseraReplicationNoPrimary',
  'TesseraReplicationModeChanged', 'TesseraReplicationMerkleSyncStuck',
  // HA (no sample here: these nodes have no HA); fired on HA nodes in test/integration/ha-operator.test.ts.
  'TesseraHaNoActiveNode', 'TesseraHaLeaseRenewSlow',
];

test('promtool check rules accepts deploy/alerts.yml, and it holds every alert the tests below evaluate', async () => {
  const r = await run(PROMTOOL, ['check', 'rules', RULES]);
  expect(r.out).toContain(`SUCCESS: ${ALERTS.length} rules found`);
  expect(r.code).toBe(0);
});

test('a DR pair and a performance secondary: healthy, nothing fires; a stopped secondary, lag, a stopped primary each fire their alert', async () => {
  const { primary: p, dr: [d], performance: [f] } = await startCluster(h, { mountKv2: true, dr: ['dr-east'], performance: ['perf-eu'], node: SLOW_START });
  const [drNode, perfNode] = [d!, f!];
  const pv = vault(p.apiAddr, p.rootToken);
  for (let i = 0; i < 5; i++) expect((await pv.put(`secret/data/ok/${i}`, { data: { i } })).status).toBe(200);
  await waitInSync(p.apiAddr, drNode.apiAddr);
  const all = () => Promise.all([scrape('primary', p.apiAddr, p.rootToken), scrape('dr-east', drNode.apiAddr, p.rootToken), scrape('perf-eu', perfNode.apiAddr, perfNode.rootToken)]);
  const healthy = merge(...(await eventually(async () => {
    const s = await all();
    // Every role answers, the DR secondary included, with its heartbeat and phase.
    expect(pick(s[1], 'tessera_replication_primary_heartbeat_age_seconds', 'kind="dr"')).toHaveLength(1);
    expect(pick(s[2], 'tessera_replication_state', 'kind="performance"', 'state="stream-wals"')).toHaveLength(1);
    expect(pick(s[0], 'tessera_replication_secondary_wal_headroom_seconds')).toHaveLength(2);
    return s;
  })));
  for (const alert of ALERTS) await expectAlerts(healthy, alert, []);

  // Verification mismatch: the flag from continuous verification, as scraped when present.
  const mismatch = new Map(healthy);
  const flag = pick(healthy, 'tessera_replication_verification_mismatch', 'instance="dr-east"')[0] ?? 'tessera_replication_verification_mismatch{kind="dr",instance="dr-east",job="tessera"}';
  mismatch.set(flag, '1');
  await expectAlerts(mismatch, 'TesseraReplicationVerificationMismatch', [{ labels: labelsOf(flag) }]);

  // The performance secondary stops; the primary keeps writing.
  await perfNode.stop();
  for (let i = 0; i < 20; i++) expect((await pv.put(`secret/data/while-down/${i}`, { data: { i } })).status).toBe(200);
  const down = await eventually(async () => {
    const s = merge(...(await all()));
    expect(s.get('tessera_replication_secondary_connected{kind="performance",secondary_id="perf-eu",instance="primary",job="tessera"}')).toBe('0');
    expect(Number(s.get('tessera_replication_secondary_lag_entries{kind="performance",secondary_id="perf-eu",instance="primary",job="tessera"}'))).toBeGreaterThanOrEqual(20);
    return s;
  });
  await expectAlerts(down, 'TesseraReplicationSecondaryDisconnected', [{ labels: { kind: 'performance', secondary_id: 'perf-eu', instance: 'primary', job: 'tessera' } }]);
  await expectAlerts(down, 'TesseraNodeUnavailable', [{ labels: { instance: 'perf-eu', job: 'tessera' } }]);
  // Lag: the scraped series of the stopped secondary; its value is set above the thresholds by
  // the test (5 minutes or 50000 entries of real lag take too long to make here).
  const lagging = new Map(down);
  lagging.set('tessera_replication_secondary_lag_ms{kind="performance",secondary_id="perf-eu",instance="primary",job="tessera"}', '600000');
  lagging.set('tessera_replication_secondary_lag_entries{kind="performance",secondary_id="perf-eu",instance="primary",job="tessera"}', '60000');
  await expectAlerts(lagging, 'TesseraReplicationLagHigh', [{ labels: { kind: 'performance', secondary_id: 'perf-eu', instance: 'primary', job: 'tessera' } }]);
  await expectAlerts(lagging, 'TesseraReplicationLagEntriesHigh', [{ labels: { kind: 'performance', secondary_id: 'perf-eu', instance: 'primary', job: 'tessera' } }]);
  await expectAlerts(down, 'TesseraReplicationLagHigh', []);

  // The primary stops: its DR secondary still answers, in mode secondary, with nobody primary,
  // and the age of its last heartbeat grows (past 3 s: longer than any heartbeat interval). The
  // rule wants 30 s; like the lag above, the test sets the scraped series past it rather than
  // wait 30 s, and checks the rule stays quiet at the real (younger) age.
  await p.stop();
  const age = 'tessera_replication_primary_heartbeat_age_seconds{kind="dr",instance="dr-east",job="tessera"}';
  const orphaned = await eventually(async () => {
    const s = merge(...(await all()));
    expect(Number(s.get(age))).toBeGreaterThan(3);
    return s;
  }, { timeoutMs: 60_000, intervalMs: 250 });
  expect(orphaned.get('tessera_replication_mode{kind="dr",mode="secondary",instance="dr-east",job="tessera"}')).toBe('1');
  await expectAlerts(orphaned, 'TesseraReplicationNoPrimary', [{ labels: { kind: 'dr' } }]);
  expect(Number(orphaned.get(age))).toBeLessThan(30);
  await expectAlerts(orphaned, 'TesseraReplicationPrimaryUnreachable', []);
  const unreachable = new Map(orphaned);
  unreachable.set(age, '31');
  await expectAlerts(unreachable, 'TesseraReplicationPrimaryUnreachable', [{ labels: { kind: 'dr', instance: 'dr-east', job: 'tessera' } }]);
}, 240_000);

test('a 50-entry WAL and writes while its DR secondary is down: WAL headroom low; the secondary\'s mode change and a stalled merkle-sync fire theirs; sealed, the node alert fires', async () => {
  // The secondary is scraped once before replication is enabled, with its own (pre-activation) root token.
  let before: Samples = new Map();
  const c = await startCluster(h, {
    node: SLOW_START,
    primary: { replication: { walMaxEntries: 50 } },
    mountKv2: true,
    dr: ['dr-west'],
    beforeEnable: async ({ dr: [s] }) => {
      before = await scrape('dr-west', s!.apiAddr, s!.rootToken);
      expect(before.get('tessera_replication_mode{kind="dr",mode="disabled",instance="dr-west",job="tessera"}')).toBe('1');
    },
  });
  const p = c.primary;
  const s = c.dr[0]!;
  const pk = { rootToken: p.rootToken };
  await waitInSync(p.apiAddr, s.apiAddr);
  const after = await eventually(async () => {
    const x = await scrape('dr-west', s.apiAddr, pk.rootToken);
    expect(x.get('tessera_replication_state{kind="dr",state="stream-wals",instance="dr-west",job="tessera"}')).toBe('1');
    return x;
  });

  // The mode of one node changed (disabled, then secondary): both scrapes on one timeline.
  const timeline: Record<string, string> = {};
  for (const k of before.keys()) if (!after.has(k)) timeline[k] = `${before.get(k)}+0x5 _x15`;
  for (const k of after.keys()) if (!before.has(k)) timeline[k] = `_x5 ${after.get(k)}+0x15`;
  await expectAlerts(merge(before, after), 'TesseraReplicationModeChanged', [{ labels: { kind: 'dr', instance: 'dr-west' } }], timeline);
  await expectAlerts(after, 'TesseraReplicationModeChanged', []);

  // A stalled merkle-sync: the secondary's scraped series, its phase set to merkle-sync and its
  // key count held still by the test (a real sync ends too fast to catch stalled).
  const stalled = new Map([...after].filter(([k]) => !k.startsWith('tessera_replication_state{')));
  stalled.set('tessera_replication_state{kind="dr",state="merkle-sync",instance="dr-west",job="tessera"}', '1');
  stalled.set('tessera_replication_merkle_sync_keys_total{kind="dr",instance="dr-west",job="tessera"}', '5000');
  stalled.set('tessera_replication_merkle_sync_keys_done{kind="dr",instance="dr-west",job="tessera"}', '1200');
  await expectAlerts(stalled, 'TesseraReplicationMerkleSyncStuck', [{ labels: { kind: 'dr', state: 'merkle-sync', instance: 'dr-west', job: 'tessera' } }]);
  await expectAlerts(after, 'TesseraReplicationMerkleSyncStuck', []);

  // The secondary stops; 40 writes leave it at most 10 entries from falling off the 50-entry WAL.
  await s.stop();
  const pv = vault(p.apiAddr, pk.rootToken);
  for (let i = 0; i < 40; i++) expect((await pv.put(`secret/data/w/${i}`, { data: { i } })).status).toBe(200);
  const low = await scrape('primary-small-wal', p.apiAddr, pk.rootToken);
  const headroom = 'tessera_replication_secondary_wal_headroom_seconds{kind="dr",secondary_id="dr-west",instance="primary-small-wal",job="tessera"}';
  expect(Number(low.get(headroom))).toBeLessThan(900);
  expect(Number(low.get('tessera_replication_secondary_wal_headroom_entries{kind="dr",secondary_id="dr-west",instance="primary-small-wal",job="tessera"}'))).toBeLessThanOrEqual(10);
  await expectAlerts(low, 'TesseraReplicationWalHeadroomLow', [{ labels: { kind: 'dr', secondary_id: 'dr-west', instance: 'primary-small-wal', job: 'tessera' } }]);

  // Sealed: the node answers, but refuses the scrape (503), so `up` is 0 and the node alert fires.
  expect((await pv.put('sys/seal')).status).toBe(204);
  expect((await vault(p.apiAddr, pk.rootToken).get('sys/metrics?format=prometheus')).status).toBe(503);
  const sealed = await scrape('primary-small-wal', p.apiAddr, pk.rootToken);
  await expectAlerts(sealed, 'TesseraNodeUnavailable', [{ labels: { instance: 'primary-small-wal', job: 'tessera' } }]);
}, 240_000);
