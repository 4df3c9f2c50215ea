/**
 * Issue 17 item 19: the dashboard shows a secondary's last error as past (greyed, with its time)
 * once the connection is healthy again, not as a current red error. In-process nodes with real
 * gRPC, the DR secondary reaching its primary through a TCP proxy that the test cuts and heals;
 * the page in a real headless browser (Debian's chromium driven by puppeteer-core).
 */
import puppeteer, { type Browser } from 'puppeteer-core';
import { eventually, startCluster, useHarness } from '../harness/index.js';
import { drStatus } from '../support/dr.js';

const h = useHarness();
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
});

test('a secondary\'s last error is shown as past once its connection is healthy and verified again', async () => {
  // The secondary is told the proxy's address, in front of the primary's cluster port (closed by the harness).
  const c = await startCluster(h, { node: { inProcess: true }, proxy: true, dr: ['east'] });
  const s = c.dr[0]!;
  const proxy = c.proxy!;
  await eventually(async () => expect(await drStatus(s)).toMatchObject({ state: 'stream-wals', connection_state: 'ready' }), { timeoutMs: 15_000 });

  // A partition: the secondary records an error; healed, it streams and verifies again.
  proxy.cut();
  await eventually(async () => expect((await drStatus(s)).last_error).toBeTruthy(), { timeoutMs: 15_000 });
  proxy.heal();
  const healthy = await eventually(async () => {
    const st = await drStatus(s);
    expect(st).toMatchObject({ state: 'stream-wals', connection_state: 'ready', verification_mismatch: false });
    expect(Date.parse(st.last_verified_at)).toBeGreaterThan(Date.parse(st.last_error_time));
    return st;
  }, { timeoutMs: 20_000 });
  expect(healthy.last_error).toBeTruthy();

  browser = await puppeteer.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless=new'] });
  const page = await browser.newPage();
  expect((await page.goto(`${s.apiAddr}/ui/`, { waitUntil: 'load' }))?.status()).toBe(200);
  const shown = await eventually(async () => {
    const x = await page.$eval('section[data-kind="dr"] .last-error', (e) => ({ classes: [...e.classList], text: e.textContent ?? '' }));
    expect(x.text).toContain(healthy.last_error);
    return x;
  }, { timeoutMs: 15_000 });
  expect(shown.classes).not.toContain('error');
  expect(shown.classes).toContain('past');
  expect(shown.text).toMatch(/^past error \(\d+\.\d s ago; connected and streaming since\)/);

  // Cut again: the same error place turns back into a current one.
  proxy.cut();
  await eventually(async () => {
    const x = await page.$eval('section[data-kind="dr"] .last-error', (e) => [...e.classList]);
    expect(x).toContain('error');
  }, { timeoutMs: 15_000 });
}, 90_000);
