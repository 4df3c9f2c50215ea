/**
 * HA in the CLI against a fake node: `status` shows Vault's HA rows and `-format=json` fields from
 * sys/leader, `operator members` lists sys/ha-status in Vault's columns, `operator step-down`
 * puts sys/step-down and prints Vault's success line; errors come out in Vault's layout.
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FakeVault, envelope } from '../../api/testing/fake-vault.js';
import { runCli } from '../testing/run-cli.js';
import { memberRows } from './operator-members.js';

let fake: FakeVault;
const run = (argv: string[]) => runCli(argv, { env: { TESSERA_ADDR: fake.addr, TESSERA_TOKEN: 'hvs.root' } });

const unsealed = { type: 'shamir', initialized: true, sealed: false, t: 1, n: 1, progress: 0, nonce: '', version: '0.1.0', cluster_id: 'c-1' };
const ZERO = '0001-01-01T00:00:00Z';
const leader = (over: Record<string, unknown>) => ({
  ha_enabled: true, is_self: false, active_time: ZERO, leader_address: 'http://10.0.0.1:8200', leader_cluster_address: 'https://10.0.0.1:8201',
  performance_standby: false, performance_standby_last_remote_wal: 0, last_wal: 0, ...over,
});

beforeEach(async () => {
  fake = await FakeVault.start();
  fake.on('GET', 'sys/replication/dr/status', { status: 200, body: envelope({ mode: 'disabled' }) });
  fake.on('GET', 'sys/replication/performance/status', { status: 200, body: envelope({ mode: 'disabled' }) });
});
afterEach(async () => {
  await fake.close();
});

/** The Key/Value rows of a status table as a map. */
function rows(stdout: string): Map<string, string> {
  return new Map(stdout.split('\n').map((l) => l.split(/\s{4,}/)).filter((c) => c.length === 2).map(([k, v]) => [k!, v!]));
}

describe('status shows HA', () => {
  it('on the active node: HA Enabled, HA Cluster, HA Mode active and Active Since', async () => {
    fake.on('GET', 'sys/seal-status', { status: 200, body: unsealed });
    fake.on('GET', 'sys/leader', { status: 200, body: leader({ is_self: true, active_time: '2026-11-26T02:00:00.000Z', leader_cluster_address: 'https://10.0.0.2:8201', leader_address: 'http://10.0.0.2:8200', last_wal: 9 }) });
    const r = await run(['status']);
    expect(r.code).toBe(0);
    const m = rows(r.stdout);
    expect(m.get('HA Enabled')).toBe('true');
    expect(m.get('HA Cluster')).toBe('https://10.0.0.2:8201');
    expect(m.get('HA Mode')).toBe('active');
    expect(m.get('Active Since')).toBe('2026-11-26T02:00:00.000Z');
    expect(m.has('Active Node Address')).toBe(false);
    // Vault's order: the HA rows follow the seal rows and precede replication.
    expect(r.stdout.indexOf('Cluster ID')).toBeLessThan(r.stdout.indexOf('HA Enabled'));
    expect(r.stdout.indexOf('HA Mode')).toBeLessThan(r.stdout.indexOf('DR Replication Mode'));

    const j = JSON.parse((await run(['status', '-format=json'])).stdout);
    expect(j).toMatchObject({ sealed: false, ha_enabled: true, ha_mode: 'active', is_self: true, active_time: '2026-11-26T02:00:00.000Z', leader_address: 'http://10.0.0.2:8200', leader_cluster_address: 'https://10.0.0.2:8201', last_wal: 9 });
    // Vault's omitempty: false and zero fields are left out.
    expect(j).not.toHaveProperty('performance_standby');
    expect(j).not.toHaveProperty('performance_standby_last_remote_wal');
  });

  it('on a standby: HA Mode standby and the Active Node Address; <none> when no node is active', async () => {
    fake.on('GET', 'sys/seal-status', { status: 200, body: unsealed });
    fake.on('GET', 'sys/leader', { status: 200, body: leader({}) });
    const m = rows((await run(['status'])).stdout);
    expect(m.get('HA Mode')).toBe('standby');
    expect(m.get('Active Node Address')).toBe('http://10.0.0.1:8200');
    expect(m.has('Active Since')).toBe(false);
    const j = JSON.parse((await run(['status', '-format=json'])).stdout);
    expect(j).toMatchObject({ ha_enabled: true, ha_mode: 'standby', active_time: ZERO, leader_address: 'http://10.0.0.1:8200' });
    expect(j).not.toHaveProperty('is_self');

    fake.on('GET', 'sys/leader', { status: 200, body: leader({ leader_address: '', leader_cluster_address: '' }) });
    const none = rows((await run(['status'])).stdout);
    expect(none.get('Active Node Address')).toBe('<none>');
    expect(none.get('HA Cluster')).toBe('n/a');
  });

  it('sealed: only HA Enabled, as Vault; ha_mode sealed in JSON', async () => {
    fake.on('GET', 'sys/seal-status', { status: 200, body: { ...unsealed, sealed: true, progress: 0 } });
    fake.on('GET', 'sys/leader', { status: 200, body: leader({ leader_address: '', leader_cluster_address: '' }) });
    const r = await run(['status']);
    expect(r.code).toBe(2);
    const m = rows(r.stdout);
    expect(m.get('HA Enabled')).toBe('true');
    expect(m.has('HA Mode')).toBe(false);
    expect(JSON.parse((await run(['status', '-format=json'])).stdout)).toMatchObject({ ha_enabled: true, ha_mode: 'sealed' });

    // What a sealed node with HA answers, as Vault: 500 'Vault is sealed', read as HA enabled.
    fake.on('GET', 'sys/leader', { status: 500, body: { errors: ['Vault is sealed'] } });
    const masked = await run(['status']);
    expect(masked.code).toBe(2);
    expect(rows(masked.stdout).get('HA Enabled')).toBe('true');
    expect(masked.stdout).not.toContain('HA Mode');
    expect(JSON.parse((await run(['status', '-format=json'])).stdout)).toMatchObject({ ha_enabled: true, ha_mode: 'sealed' });
  });

  it('without HA: HA Enabled false and nothing else; a node without sys/leader shows no HA rows', async () => {
    fake.on('GET', 'sys/seal-status', { status: 200, body: unsealed });
    fake.on('GET', 'sys/leader', { status: 200, body: leader({ ha_enabled: false, leader_address: '', leader_cluster_address: '' }) });
    const r = await run(['status']);
    expect(r.stdout).toMatch(/^HA Enabled\s+false$/m);
    expect(r.stdout).not.toMatch(/HA Mode|HA Cluster/);
    const j = JSON.parse((await run(['status', '-format=json'])).stdout);
    expect(j.ha_enabled).toBe(false);
    expect(j).not.toHaveProperty('ha_mode');

    fake.on('GET', 'sys/leader', { status: 404, body: { errors: [] } });
    const old = await run(['status']);
    expect(old.code).toBe(0);
    expect(old.stdout).not.toContain('HA Enabled');
    expect(JSON.parse((await run(['status', '-format=json'])).stdout)).not.toHaveProperty('ha_enabled');
  });
});

describe('operator members', () => {
  const nodes = [
    { hostname: 'host-a', api_address: 'http://10.0.0.1:8200', cluster_address: 'https://10.0.0.1:8201', active_node: true, last_echo: null, echo_duration_ms: 0, clock_skew_ms: 0, version: '0.1.0', upgrade_version: '0.1.0', redundancy_zone: 'zone-a', replication_primary_canary_age_ms: 0 },
    { hostname: 'host-b', api_address: 'http://10.0.0.2:8200', cluster_address: 'https://10.0.0.2:8201', active_node: false, last_echo: '2026-11-26T02:00:01.000Z', echo_duration_ms: 3, clock_skew_ms: -2, version: '0.1.0', upgrade_version: '0.1.1', redundancy_zone: 'zone-b', replication_primary_canary_age_ms: 0 },
  ];

  it('prints Vault columns, one row per node, and -format=json the nodes object', async () => {
    fake.on('GET', 'sys/ha-status', { status: 200, body: envelope({ nodes }, { nodes }) });
    const r = await run(['operator', 'members']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    // Vault's columns (command/operator_members.go), Upgrade Version and Redundancy Zone included.
    expect(lines[0]!.split(/\s{4,}/)).toEqual(['Host Name', 'API Address', 'Cluster Address', 'Active Node', 'Version', 'Upgrade Version', 'Redundancy Zone', 'Last Echo']);
    expect(lines[1]).toMatch(/^-+\s+-+/);
    expect(lines.slice(2).map((l) => l.split(/\s{4,}/))).toEqual([
      ['host-a', 'http://10.0.0.1:8200', 'https://10.0.0.1:8201', 'true', '0.1.0', '0.1.0', 'zone-a'],
      ['host-b', 'http://10.0.0.2:8200', 'https://10.0.0.2:8201', 'false', '0.1.0', '0.1.1', 'zone-b', '2026-11-26T02:00:01.000Z'],
    ]);
    expect(fake.requests[0]?.headers['x-vault-token']).toBe('hvs.root');
    expect(JSON.parse((await run(['operator', 'members', '-format=json'])).stdout)).toEqual({ nodes });
  });

  it('leaves the cells of fields an older node does not send empty', () => {
    const old = { hostname: 'h', api_address: 'http://a', cluster_address: 'https://a', active_node: false, last_echo: '2026-11-26T02:00:01.000Z', version: '0.0.9' };
    expect(memberRows([old])).toEqual([['h', 'http://a', 'https://a', 'false', '0.0.9', '', '', '2026-11-26T02:00:01.000Z']]);
  });

  it('reports a refusal in Vault layout and exits 1', async () => {
    fake.on('GET', 'sys/ha-status', { status: 403, body: { errors: ['permission denied'] } });
    const r = await run(['operator', 'members']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Error listing the cluster members: Error making API request.');
    expect(r.stderr).toContain('Code: 403. Errors:\n\n* permission denied');
  });
});

describe('operator step-down', () => {
  it('puts sys/step-down and prints Vault success line with the address', async () => {
    fake.on('PUT', 'sys/step-down', { status: 204 });
    const r = await run(['operator', 'step-down']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`Success! Stepped down: ${fake.addr}\n`);
    expect(fake.requests.map((q) => [q.method, q.path, q.headers['x-vault-token']])).toEqual([['PUT', 'sys/step-down', 'hvs.root']]);
  });

  it('reports a refusal in Vault layout; extra arguments are a usage error', async () => {
    fake.on('PUT', 'sys/step-down', { status: 403, body: { errors: ['permission denied'] } });
    const r = await run(['operator', 'step-down']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Error stepping down: Error making API request\.\n\nURL: PUT .*\/v1\/sys\/step-down\nCode: 403/);
    const extra = await run(['operator', 'step-down', 'now']);
    expect(extra.code).toBe(2);
    expect(fake.requests).toHaveLength(1);
  });
});
