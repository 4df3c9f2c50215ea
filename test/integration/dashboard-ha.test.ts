/**
 * The dashboard's HA section (issue 19 item 4). `haView`, the pure function of
 * src/ui/static/app.js, loaded in Node: what it makes of sys/leader, the seal, and sys/ha-status.
 * Then the page itself in headless chromium against two in-process HA nodes on a private
 * PostgreSQL: a standby's page shows its mode and the active node's address without a token, and
 * with one every node of the cluster with the active one marked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { repoRoot, startHaCluster, useHarness } from '../harness/index.js';
import { eventually } from '../harness/eventually.js';

interface Reply { status: number; body?: unknown; error?: string }
type HaView = { enabled: boolean; mode?: string; active?: string; cluster?: string; since?: string; note?: string; nodes?: { api: string; active: boolean; host: string; lastEcho: string | null }[] };

function loadHaView(): (leader: Reply | undefined, sealed: boolean, members: Reply | undefined) => HaView {
  const module = { exports: {} as { haView?: unknown } };
  runInNewContext(readFileSync(join(repoRoot, 'src', 'ui', 'static', 'app.js'), 'utf8'), { module });
  return module.exports.haView as ReturnType<typeof loadHaView>;
}

const ZERO = '0001-01-01T00:00:00Z';
const leaderBody = (over: Record<string, unknown> = {}) => ({ ha_enabled: true, is_self: false, active_time: ZERO, leader_address: 'http://a:8200', leader_cluster_address: 'https://a:8201', ...over });
const node = (api: string, active: boolean) => ({ hostname: `h-${api}`, api_address: api, cluster_address: `${api}1`, active_node: active, last_echo: active ? null : '2026-11-26T00:00:00Z', version: '0.1.0' });

describe('haView (app.js)', () => {
  const haView = loadHaView();

  it('without HA, or without an answer from sys/leader: not enabled, with a note', () => {
    expect(haView({ status: 200, body: leaderBody({ ha_enabled: false }) }, false, undefined)).toMatchObject({ enabled: false, note: expect.stringContaining('HA is not enabled') });
    expect(haView({ status: 0, error: 'TypeError: failed' }, false, undefined)).toEqual({ enabled: false, note: 'sys/leader: unreachable: TypeError: failed' });
    expect(haView({ status: 503, body: { errors: ['x'] } }, false, undefined)).toEqual({ enabled: false, note: 'sys/leader: status 503' });
  });

  it('without a token: the mode and the active node from sys/leader, and a note asking for a token', () => {
    const standby = haView({ status: 200, body: leaderBody() }, false, undefined);
    expect(standby).toMatchObject({ enabled: true, mode: 'standby', active: 'http://a:8200', cluster: 'https://a:8201', nodes: undefined, note: expect.stringContaining('Give a token') });
    expect(standby.since).toBeUndefined();
    expect(haView({ status: 200, body: leaderBody({ is_self: true, active_time: '2026-11-26T01:00:00Z' }) }, false, undefined)).toMatchObject({ mode: 'active', since: '2026-11-26T01:00:00Z' });
    expect(haView({ status: 200, body: leaderBody({ leader_address: '' }) }, true, undefined)).toMatchObject({ mode: 'sealed', active: '' });
    // What a sealed node with HA answers, as Vault.
    expect(haView({ status: 500, body: { errors: ['Vault is sealed'] } }, true, undefined)).toMatchObject({ enabled: true, mode: 'sealed', active: '' });
    expect(haView({ status: 500, body: { errors: ['other'] } }, false, undefined)).toEqual({ enabled: false, note: 'sys/leader: status 500' });
  });

  it('with a token: every node, sorted by API address, the active one marked; a refusal becomes the note', () => {
    const members = { status: 200, body: { data: { nodes: [node('http://c', false), node('http://a', true)] }, nodes: [node('http://c', false), node('http://a', true)] } };
    const v = haView({ status: 200, body: leaderBody() }, false, members);
    expect(v.note).toBeUndefined();
    expect(v.nodes!.map((n) => [n.api, n.active, n.lastEcho])).toEqual([['http://a', true, null], ['http://c', false, '2026-11-26T00:00:00Z']]);
    // The envelope's data alone is enough.
    expect(haView({ status: 200, body: leaderBody() }, false, { status: 200, body: { data: { nodes: [node('http://a', true)] } } }).nodes).toHaveLength(1);
    expect(haView({ status: 200, body: leaderBody() }, false, { status: 403, body: { errors: ['permission denied'] } })).toMatchObject({ nodes: undefined, note: 'sys/ha-status: status 403: permission denied' });
  });
});

describe('the HA section in a browser', () => {
  const h = useHarness();
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
  });

  /** What the page's HA section shows. */
  const haSection = (page: Page) => page.$eval('#ha', (s) => ({
    mode: s.getAttribute('data-ha-mode'),
    shownMode: s.querySelector('.ha-mode')?.textContent ?? '',
    active: s.querySelector('.ha-active .v')?.textContent ?? '',
    note: s.querySelector('.ha-note')?.textContent ?? '',
    rows: [...s.querySelectorAll('tr[data-api-address]')].map((tr) => [tr.getAttribute('data-api-address'), tr.querySelector('.ha-role')?.textContent ?? '']),
  }));

  it('shows the mode and the active node without a token, and every node with one', async () => {
    // Two in-process nodes on a private PostgreSQL (test/harness/ha.ts), stopped by the harness's cleanup.
    const c = await startHaCluster(h, { inProcess: true, nodes: 2 });
    const active = await c.active();
    const [standby] = await c.standbys();

    browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--headless=new'] });
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    expect((await page.goto(`${standby!.apiAddr}/ui/`, { waitUntil: 'load' }))?.status()).toBe(200);
    await eventually(async () => {
      const v = await haSection(page);
      expect(v).toMatchObject({ mode: 'standby', shownMode: 'standby', active: active!.apiAddr, rows: [] });
      expect(v.note).toContain('Give a token');
    }, { timeoutMs: 15_000, intervalMs: 250 });

    await page.type('#token', c.rootToken);
    await page.click('#token-form button[type="submit"]');
    const expected = [[active!.apiAddr, 'active'], [standby!.apiAddr, 'standby']].sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
    await eventually(async () => expect((await haSection(page)).rows).toEqual(expected), { timeoutMs: 15_000, intervalMs: 250 });
    expect(problems).toEqual([]);
  });
});
