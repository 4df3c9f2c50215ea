/**
 * Issue 19 item 4, the operator's side of HA: the CLI, in process, against three in-process nodes
 * on one private PostgreSQL with `ha_enabled` (test/harness/ha.ts), one cluster for both HA cases. `tessera status` shows HA Mode active on the active
 * node and standby (with the Active Node Address) on the others, `tessera operator members` lists
 * every node with exactly one active, `tessera operator step-down` moves the active role (sys/leader
 * polled with a deadline), and each node's metrics say its role. A node without HA says so too.
 * The HA rules of deploy/alerts.yml run in `promtool test rules` over the samples scraped from the
 * three nodes: nothing fires on the healthy scrape; with the active node's value set by the test
 * (no node active, a lease renewed late) each rule fires.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliRun } from '../../src/cli/testing/run-cli.js';
import { eventually } from '../harness/eventually.js';
import { repoRoot, startHaCluster, useHarness, type HaCluster, type InProcessHaNode } from '../harness/index.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { usePostgres } from '../support/postgres.js';

const h = useHarness();
const postgres = usePostgres();

const nodes: TestNode[] = [];
afterEach(async () => {
  for (const n of nodes.splice(0).reverse()) await n.stop();
});

/** Three nodes on one database (test/harness/ha.ts), shared by the HA cases: each leaves them all up, one active. */
let ha: HaCluster<InProcessHaNode>;
beforeAll(async () => {
  ha = await startHaCluster(h, { inProcess: true, postgres: postgres(), database: 'ha_cli' });
});

/** The one node whose sys/leader says is_self, once the others name it as leader (other than `not`). */
const activeOf = (all: readonly TestNode[], not?: TestNode): Promise<TestNode> => ha.active({ among: all as InProcessHaNode[], ...(not !== undefined ? { not: not as InProcessHaNode } : {}) });

const cli = (n: TestNode, argv: string[], token = n.rootToken): Promise<CliRun> => runCli(argv, { env: { TESSERA_ADDR: n.apiAddr, TESSERA_TOKEN: token, HOME: n.dataDir } });

/** The Key/Value rows of `tessera status`. */
async function statusRows(n: TestNode): Promise<Map<string, string>> {
  const r = await cli(n, ['status']);
  expect(r.code).toBe(0);
  return new Map(r.stdout.split('\n').map((l) => l.split(/\s{4,}/)).filter((c) => c.length === 2).map(([k, v]) => [k!, v!]));
}

/** The tessera_ha_* samples of a node's own metrics (sys/metrics is answered locally by a standby). */
async function haMetrics(n: TestNode): Promise<Map<string, number>> {
  const r = await n.call('GET', 'sys/metrics?format=prometheus');
  expect(r.status).toBe(200);
  const out = new Map<string, number>();
  for (const line of r.text.split('\n')) {
    const m = /^(tessera_ha_[a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

async function expectRole(n: TestNode, role: 'active' | 'standby', active: TestNode): Promise<void> {
  const rows = await statusRows(n);
  expect(rows.get('HA Enabled')).toBe('true');
  expect(rows.get('HA Mode')).toBe(role);
  expect(rows.get('HA Cluster')).toMatch(/^https:\/\//);
  if (role === 'active') {
    expect(rows.has('Active Node Address')).toBe(false);
    expect(Date.parse(rows.get('Active Since') ?? '')).toBeGreaterThan(0);
  } else expect(rows.get('Active Node Address')).toBe(active.apiAddr);
  const m = await haMetrics(n);
  expect(m.get('tessera_ha_enabled')).toBe(1);
  expect(m.get('tessera_ha_active')).toBe(role === 'active' ? 1 : 0);
  for (const mode of ['sealed', 'standby', 'active', 'cooldown']) expect(m.get(`tessera_ha_mode{mode="${mode}"}`)).toBe(mode === role ? 1 : 0);
  expect(m.get('tessera_ha_lease_ttl_seconds')).toBeGreaterThan(0);
  expect(m.get('tessera_ha_epoch')).toBeGreaterThanOrEqual(1);
  if (role === 'active') {
    expect(m.get('tessera_ha_lease_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(m.get('tessera_ha_lease_age_seconds')).toBeLessThan(m.get('tessera_ha_lease_ttl_seconds')!);
  } else expect(m.has('tessera_ha_lease_age_seconds')).toBe(false);
}

const RULES = join(repoRoot, 'deploy', 'alerts.yml');

/** The tessera_ha_* samples of each node as promtool input series, labelled instance="n<i>", job="tessera". */
async function scrapeAll(all: readonly TestNode[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [i, n] of all.entries()) {
    for (const [series, value] of await haMetrics(n)) {
      const extra = `instance="n${i}",job="tessera"`;
      out.set(series.endsWith('}') ? `${series.slice(0, -1)},${extra}}` : `${series}{${extra}}`, value);
    }
  }
  return out;
}

/** promtool: every series held at its value for 20 minutes; at 15 minutes `alert` fired with exactly these label sets. */
async function expectAlerts(samples: ReadonlyMap<string, number>, alert: string, expected: readonly Record<string, string>[]): Promise<void> {
  const yml = await readFile(RULES, 'utf8');
  const block = yml.split(/\n\s+- alert: /).find((b) => b.startsWith(`${alert}\n`)) ?? '';
  const severity = /severity: "([a-z]+)"/.exec(block)?.[1];
  const annotations = Object.fromEntries([...block.slice(block.indexOf('annotations:')).matchAll(/^\s+([a-z_]+): (".*")$/gm)].map((m) => [m[1]!, JSON.parse(m[2]!) as string]));
  const test = {
    rule_files: [RULES],
    evaluation_interval: '1m',
    tests: [{
      interval: '1m',
      input_series: [...samples].map(([series, value]) => ({ series, values: `${value}+0x20` })),
      alert_rule_test: [{ eval_time: '15m', alertname: alert, exp_alerts: expected.map((labels) => ({ exp_labels: { ...labels, severity }, exp_annotations: annotations })) }],
    }],
  };
  const dir = await mkdtemp(join(tmpdir(), 'tessera-ha-rules-'));
  try {
    const file = join(dir, 'test.json');
    await writeFile(file, JSON.stringify(test));
    const r = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile(process.env.PROMTOOL ?? 'promtool', ['test', 'rules', file], { timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, out: `${stdout}${stderr}` }));
    });
    expect({ alert, code: r.code, out: r.code === 0 ? 'SUCCESS' : r.out }).toEqual({ alert, code: 0, out: 'SUCCESS' });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `operator members` as rows of cells (header and dashes dropped). */
async function members(n: TestNode): Promise<string[][]> {
  const r = await cli(n, ['operator', 'members']);
  expect(r.code).toBe(0);
  const lines = r.stdout.trimEnd().split('\n');
  expect(lines[0]!.split(/\s{4,}/)).toEqual(['Host Name', 'API Address', 'Cluster Address', 'Active Node', 'Version', 'Upgrade Version', 'Redundancy Zone', 'Last Echo']);
  return lines.slice(2).map((l) => l.split(/\s{4,}/));
}

describe('the CLI and metrics on an HA cluster', () => {
  it('status, operator members and metrics show which node is active, on every node', async () => {
    const all: TestNode[] = ha.nodes;
    const active = await activeOf(all);
    for (const n of all) await eventually(() => expectRole(n, n === active ? 'active' : 'standby', active), { timeoutMs: 10_000 });

    const json = JSON.parse((await cli(all.find((n) => n !== active)!, ['status', '-format=json'])).stdout);
    expect(json).toMatchObject({ sealed: false, ha_enabled: true, ha_mode: 'standby', leader_address: active.apiAddr });
    expect(json).not.toHaveProperty('is_self');
    expect(JSON.parse((await cli(active, ['status', '-format=json'])).stdout)).toMatchObject({ ha_enabled: true, ha_mode: 'active', is_self: true });

    // From every node (a standby relays sys/ha-status): all three, exactly one active, the one sys/leader names.
    for (const n of all) {
      const rows = await eventually(async () => {
        const r = await members(n);
        expect(r).toHaveLength(3);
        return r;
      }, { timeoutMs: 10_000 });
      expect(rows.map((r) => r[1]).sort()).toEqual(all.map((x) => x.apiAddr).sort());
      const actives = rows.filter((r) => r[3] === 'true');
      expect(actives.map((r) => r[1])).toEqual([active.apiAddr]);
      // The active node's Last Echo is empty; the others' an RFC 3339 time (no node has a redundancy zone: that cell is empty too).
      expect(actives[0]).toHaveLength(6);
      for (const r of rows.filter((x) => x[3] === 'false')) expect(Date.parse(r[6] ?? '')).toBeGreaterThan(0);
    }
    const j = JSON.parse((await cli(active, ['operator', 'members', '-format=json'])).stdout);
    expect(j.nodes).toHaveLength(3);
    expect(j.nodes.filter((x: { active_node: boolean }) => x.active_node)).toEqual([expect.objectContaining({ api_address: active.apiAddr, last_echo: null })]);

    // The HA rules of deploy/alerts.yml over what the three nodes expose.
    const samples = await scrapeAll(all);
    const me = `n${all.indexOf(active)}`;
    expect(samples.get(`tessera_ha_active{instance="${me}",job="tessera"}`)).toBe(1);
    for (const alert of ['TesseraHaNoActiveNode', 'TesseraHaLeaseRenewSlow']) await expectAlerts(samples, alert, []);
    // Values set by the test, on the scraped series: no node active; the active node's lease renewed late.
    await expectAlerts(new Map([...samples, [`tessera_ha_active{instance="${me}",job="tessera"}`, 0]]), 'TesseraHaNoActiveNode', [{ job: 'tessera' }]);
    const ttl = samples.get(`tessera_ha_lease_ttl_seconds{instance="${me}",job="tessera"}`)!;
    await expectAlerts(new Map([...samples, [`tessera_ha_lease_age_seconds{instance="${me}",job="tessera"}`, 0.6 * ttl]]), 'TesseraHaLeaseRenewSlow', [{ instance: me, job: 'tessera' }]);

    // Members needs a token: the refusal comes back in Vault's layout.
    const refused = await cli(active, ['operator', 'members'], 'not-a-token');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('Error listing the cluster members: Error making API request.');
    expect(refused.stderr).toContain('Code: 403.');
  });

  it('operator step-down moves the active role, and status and metrics follow', async () => {
    const all: TestNode[] = ha.nodes;
    const first = await activeOf(all);
    const standby = all.find((n) => n !== first)!;
    const epochBefore = (await haMetrics(first)).get('tessera_ha_epoch')!;

    // Refused without sudo: nothing moves.
    const refused = await cli(standby, ['operator', 'step-down'], 'not-a-token');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^Error stepping down: Error making API request\.\n\nURL: PUT .*\/v1\/sys\/step-down\nCode: 403/);
    expect(await activeOf(all)).toBe(first);

    // Through a standby: relayed to the active node, which gives up the role.
    const r = await cli(standby, ['operator', 'step-down']);
    expect(r).toMatchObject({ code: 0, stderr: '', stdout: `Success! Stepped down: ${standby.apiAddr}\n` });
    const second = await activeOf(all, first);
    for (const n of all) await eventually(() => expectRole(n, n === second ? 'active' : 'standby', second), { timeoutMs: 15_000 });
    expect((await haMetrics(second)).get('tessera_ha_epoch')).toBeGreaterThan(epochBefore);
    await eventually(async () => expect((await members(first)).filter((x) => x[3] === 'true').map((x) => x[1])).toEqual([second.apiAddr]), { timeoutMs: 10_000 });

    // Sent to the active node itself.
    expect((await cli(second, ['operator', 'step-down'])).stdout).toBe(`Success! Stepped down: ${second.apiAddr}\n`);
    const third = await activeOf(all, second);
    await eventually(() => expectRole(third, 'active', third), { timeoutMs: 15_000 });
  });

  it('a node without HA: HA Enabled false, itself as the only member, tessera_ha_enabled 0', async () => {
    const n = await startTestNode();
    nodes.push(n);
    const r = await cli(n, ['status']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^HA Enabled\s+false$/m);
    expect(r.stdout).not.toMatch(/HA Mode|HA Cluster|Active Node Address/);
    const rows = await members(n);
    expect(rows).toHaveLength(1);
    expect(rows[0]![1]).toBe(n.apiAddr);
    const m = await haMetrics(n);
    expect([...m]).toEqual([['tessera_ha_enabled', 0]]);
    expect((await cli(n, ['operator', 'step-down'])).code).toBe(0);
  });
});
