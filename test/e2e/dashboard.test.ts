/**
 * Issue 10 item 3: the topology dashboard in a real headless browser (Debian's chromium driven by
 * puppeteer-core) against real node processes: a primary with a DR secondary and a performance
 * secondary. The page, served by the primary at /ui/, shows both kinds with this node's role, the
 * secondaries' ids, connection, lag and a lag chart, WAL headroom, and (with a token) the paths
 * filter; once the DR secondary is paused (SIGSTOP) it shows it disconnected. A screenshot is
 * taken every run; UPDATE_SCREENSHOT=1 also writes it to docs/dashboard.png for the README.
 */
import type { Kind } from '../../src/core/replication/index.js';
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { eventually, repoRoot, setPathsFilter, startCluster, startWriter, useHarness, type StartedNode, type Writer } from '../harness/index.js';

const h = useHarness();
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let browser: Browser | undefined;

afterAll(async () => {
  await browser?.close();
});

/** What the page shows for one kind, read through the DOM. */
async function kindView(page: Page, kind: Kind) {
  return page.$eval(`section[data-kind="${kind}"]`, (s) => ({
    mode: s.getAttribute('data-mode'),
    role: s.querySelector('.role')?.textContent ?? '',
    rows: [...s.querySelectorAll('tr[data-secondary-id]')].map((tr) => ({
      id: tr.querySelector('.secondary-id')?.textContent ?? '',
      connection: tr.querySelector('.connection')?.textContent ?? '',
      lag: tr.querySelector('.lag')?.textContent ?? '',
      headroom: tr.querySelector('.headroom')?.textContent ?? '',
      filter: tr.querySelector('.filter')?.textContent ?? null,
      chartPoints: tr.querySelector('svg.sparkline polyline')?.getAttribute('points')?.split(' ').length ?? 0,
    })),
  }));
}

test('the dashboard shows the topology live, and a paused DR secondary as disconnected', async () => {
  const { primary, dr: [east], performance: [west] } = await startCluster(h, { mountKv2: true, dr: ['dr-east'], performance: ['perf-west'] });
  expect((await primary.vault().post('sys/mounts/other', { type: 'kv', options: { version: '2' } })).status).toBe(204);
  await setPathsFilter(primary.apiAddr, primary.rootToken, 'perf-west', { mode: 'deny', paths: ['other'] });
  // A few writes so the WAL grows while the page samples it.
  for (let i = 0; i < 5; i++) expect((await primary.vault().put(`secret/data/d${i}`, { data: { v: i } })).status).toBe(200);

  browser = await puppeteer.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless=new'] });
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${String(e)}`));
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  const res = await page.goto(`${primary.apiAddr}/ui/`, { waitUntil: 'load' });
  expect(res?.status()).toBe(200);

  const shown = await eventually(async () => {
    const dr = await kindView(page, 'dr');
    const perf = await kindView(page, 'performance');
    expect(dr.mode).toBe('primary');
    expect(dr.rows.map((r) => [r.id, r.connection])).toEqual([['dr-east', 'connected']]);
    expect(perf.rows.map((r) => [r.id, r.connection])).toEqual([['perf-west', 'connected']]);
    for (const r of [...dr.rows, ...perf.rows]) {
      expect(r.lag).toMatch(/^\d+ entries, \d+ ms$/);
      expect(r.headroom).toMatch(/^\d+ entries \((∞|[\d.]+ (s|min|h|d))\)$/);
      expect(r.chartPoints).toBeGreaterThanOrEqual(3);
    }
    return { dr, perf };
  }, { timeoutMs: 20_000, intervalMs: 250 });
  expect(shown.dr.role).toBe('primary');
  expect(shown.perf.role).toBe('primary');
  // Without a token the filter column says so rather than guessing.
  expect(shown.perf.rows[0]!.filter).toBe('token needed');

  // With a token (kept in sessionStorage), the page shows what the status endpoints do not: the filter.
  await page.type('#token', primary.rootToken);
  await page.click('#token-form button[type="submit"]');
  await eventually(async () => expect((await kindView(page, 'performance')).rows[0]!.filter).toBe('deny: other'), { timeoutMs: 15_000, intervalMs: 250 });
  const stored = await page.evaluate(() => (globalThis as unknown as { sessionStorage: { getItem(k: string): string | null } }).sessionStorage.getItem('tessera.dashboard.token'));
  expect(stored).toBe(primary.rootToken);
  // With the token the event history shows too: the enable and each secondary's stream opening.
  await eventually(async () => {
    const events = await page.$$eval('#events li', (items) => items.map((li) => li.querySelector('b')?.textContent ?? ''));
    expect(events).toEqual(expect.arrayContaining(['primary/enable', 'secondary-connected']));
  }, { timeoutMs: 15_000, intervalMs: 250 });

  // Under writes the primary reports its write rate, and WAL headroom becomes a time.
  let writer: Writer | undefined = startWriter({ apiAddr: primary.apiAddr, token: primary.rootToken, clients: 2, path: (c, n) => `secret/data/w${c}/${n % 20}` });
  try {
    await eventually(async () => {
      const rate = await page.$eval('section[data-kind="dr"] .write-rate .v', (e) => e.textContent ?? '');
      expect(Number(/([\d.]+) entries\/s/.exec(rate)?.[1])).toBeGreaterThan(0);
      const [row] = (await kindView(page, 'dr')).rows;
      expect(row!.headroom).toMatch(/^\d+ entries \([\d.]+ (s|min|h|d)\)$/);
    }, { timeoutMs: 15_000, intervalMs: 250 });
  } finally {
    await writer.stop();
    writer = undefined;
  }

  const shot = join(tmpdir(), `tessera-dashboard-${process.pid}.png`);
  await page.screenshot({ path: shot, fullPage: true });
  expect(statSync(shot).size).toBeGreaterThan(10_000);
  if (process.env.UPDATE_SCREENSHOT === '1') {
    mkdirSync(join(repoRoot, 'docs'), { recursive: true });
    copyFileSync(shot, join(repoRoot, 'docs', 'dashboard.png'));
  }

  // The DR secondary's own page: its role, its id, and the primary it follows.
  const own = await browser.newPage();
  await own.goto(`${east!.apiAddr}/ui/`, { waitUntil: 'load' });
  await eventually(async () => {
    const v = await own.$eval('section[data-kind="dr"]', (s) => ({
      mode: s.getAttribute('data-mode'),
      id: s.querySelector('.secondary-id .v')?.textContent ?? '',
      text: s.textContent ?? '',
    }));
    expect(v.mode).toBe('secondary');
    expect(v.id).toBe('dr-east');
    expect(v.text).toContain(primary.apiAddr);
    // Continuous verification: the primary's root matched at some WAL index.
    expect(v.text).toMatch(/Verified against the primary's Merkle root at WAL \d+/);
    expect(await own.$('section[data-kind="dr"] svg.sparkline')).not.toBeNull();
  }, { timeoutMs: 15_000, intervalMs: 250 });
  await own.close();

  // Paused, the DR secondary stops heartbeating: the page shows it disconnected, the other still connected.
  (east as StartedNode).proc.kill('SIGSTOP');
  try {
    await eventually(async () => {
      expect((await kindView(page, 'dr')).rows.map((r) => [r.id, r.connection])).toEqual([['dr-east', 'disconnected']]);
      expect((await kindView(page, 'performance')).rows.map((r) => [r.id, r.connection])).toEqual([['perf-west', 'connected']]);
    }, { timeoutMs: 20_000, intervalMs: 250 });
  } finally {
    (east as StartedNode).proc.kill('SIGCONT');
  }
  expect(problems).toEqual([]);
  void west;
}, 90_000);
