/**
 * Issue 17 item 19: the dashboard shows a secondary's last error as past (greyed, with its time)
 * once the connection is healthy again, not as a current red error. In-process nodes with real
 * gRPC, the DR secondary reaching its primary through a TCP proxy that the test cuts and heals;
 * the page in a real headless browser (Debian's chromium driven by puppeteer-core).
 */
import puppeteer, { type Browser } from 'puppeteer-core';
import { eventually } from '../harness/eventually.js';
import { activateSecondary, enablePrimary, freePort } from '../harness/dr.js';
import { drStatus, secondaryToken } from '../support/dr.js';
import { startTestNode } from '../support/in-process.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let browser: Browser | undefined;
let proxy: TcpProxy | undefined;
afterAll(async () => {
  await browser?.close();
  await proxy?.close();
});

test('a secondary\'s last error is shown as past once its connection is healthy and verified again', async () => {
  const port = await freePort();
  const p = await startTestNode({ clusterAddr: `127.0.0.1:${port}` });
  proxy = await startTcpProxy(`127.0.0.1:${port}`);
  await enablePrimary(p.apiAddr, p.rootToken, proxy.address);
  const s = await startTestNode();
  await activateSecondary(s.apiAddr, s.rootToken, await secondaryToken(p, 'east'));
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
