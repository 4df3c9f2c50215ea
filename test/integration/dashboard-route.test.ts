/**
 * Issue 10 item 3: the dashboard's static files at `/ui/` on a real node (real HTTP): served open
 * (no token) with their content types and the security headers, GET and HEAD only, only the
 * listed files (anything else, traversal included, is a 404), on a sealed node too, and the
 * primary's status carries the WAL retention the page computes headroom from.
 */
import { readFileSync } from 'node:fs';
import { rawRequest, repoRoot, type RawReply } from '../harness/index.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;

beforeAll(async () => {
  n = await startTestNode({ walMaxEntries: 500 });
}, 30_000);

afterAll(async () => {
  await n.stop();
});

const get = (path: string, method = 'GET', headers: Record<string, string> = {}): Promise<RawReply> => rawRequest(n.apiAddr, { method, path, headers });

function expectSecure(r: RawReply): void {
  expect(r.headers['content-security-policy']).toMatch(/^default-src 'self'(;|$)/);
  expect(r.headers['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval/);
  expect(r.headers['x-content-type-options']).toBe('nosniff');
  expect(r.headers['x-frame-options']).toBe('DENY');
}

describe('/ui/', () => {
  it('serves the three files with their types and security headers, without a token', async () => {
    const cases: Array<[string, RegExp, string]> = [
      ['/ui/', /^text\/html; charset=utf-8$/, 'index.html'],
      ['/ui/index.html', /^text\/html; charset=utf-8$/, 'index.html'],
      ['/ui/app.js', /^text\/javascript; charset=utf-8$/, 'app.js'],
      ['/ui/style.css', /^text\/css; charset=utf-8$/, 'style.css'],
      ['/ui/?refresh=1', /^text\/html; charset=utf-8$/, 'index.html'],
    ];
    for (const [path, type, file] of cases) {
      const r = await get(path);
      expect({ path, status: r.status, type: r.headers['content-type'] }).toEqual({ path, status: 200, type: expect.stringMatching(type) });
      expectSecure(r);
      expect(r.text).toBe(readFileSync(`${repoRoot}src/ui/static/${file}`, 'utf8'));
      expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.text));
    }
    // No inline script: the page loads its own script file only (the CSP would block any other).
    const html = (await get('/ui/')).text;
    expect(html).toMatch(/<script src="app.js" defer><\/script>/);
    expect(html.match(/<script/g)).toHaveLength(1);
    // Data from the node (secondary ids, error texts) goes in as text only, never parsed as markup.
    const js = (await get('/ui/app.js')).text;
    expect(js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
    // Nothing fetched from elsewhere (the SVG namespace is a name, not a fetch).
    expect(js.replaceAll("'http://www.w3.org/2000/svg'", '')).not.toMatch(/https?:\/\//);
  });

  it('redirects /ui to /ui/ and answers HEAD with the headers only', async () => {
    const r = await get('/ui');
    expect(r.status).toBe(301);
    expect(r.headers.location).toBe('/ui/');
    expectSecure(r);
    const head = await get('/ui/app.js', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(Number(head.headers['content-length'])).toBe(readFileSync(`${repoRoot}src/ui/static/app.js`).length);
  });

  it('answers 404 for anything not listed, traversal attempts included, and 405 for other methods', async () => {
    for (const path of ['/ui/nope.js', '/ui/../package.json', '/ui/..%2f..%2fpackage.json', '/ui/%2e%2e/%2e%2e/package.json',
      '/ui//etc/passwd', '/ui/static/app.js', '/ui/app.js/', '/ui/.%2Fapp.js', '/ui/APP.JS', '/ui/app.js%00.html', '/ui/routes.js', '/uix']) {
      const r = await get(path);
      if (path === '/uix') {
        // Not under the prefix at all: the API's answer (it is not a /v1/ path).
        expect(r.status).toBe(400);
        continue;
      }
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
      expect(JSON.parse(r.text)).toEqual({ errors: ['not found'] });
      expect(r.text).not.toMatch(/"name"|tessera|root/i);
      expectSecure(r);
    }
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const r = await get('/ui/', method);
      expect({ method, status: r.status, allow: r.headers.allow }).toEqual({ method, status: 405, allow: 'GET, HEAD' });
    }
    // A token is neither needed nor looked at.
    expect((await get('/ui/', 'GET', { 'X-Vault-Token': 'not-a-token' })).status).toBe(200);
  });

  it('is served on a sealed node too (the page then shows the seal state)', async () => {
    expect((await n.call('PUT', 'sys/seal')).status).toBe(204);
    try {
      const r = await get('/ui/app.js');
      expect(r.status).toBe(200);
      expectSecure(r);
    } finally {
      for (const key of n.unsealKeys.slice(0, 2)) await n.call('PUT', 'sys/unseal', { key }, { token: null });
    }
    expect((await n.call('GET', 'sys/seal-status', undefined, { token: null })).body.sealed).toBe(false);
  });
});

describe('WAL retention in the primary status', () => {
  it('gives the first retained index and the bounds the page computes WAL headroom from', async () => {
    expect((await n.call('POST', 'sys/replication/dr/primary/enable', {})).status).toBeLessThan(300);
    for (let i = 0; i < 3; i++) expect((await n.call('PUT', `sys/policies/acl/p${i}`, { policy: 'path "a" { capabilities = ["read"] }' })).status).toBe(204);
    const st = (await n.call('GET', 'sys/replication/dr/status', undefined, { token: null })).body.data;
    expect(st.mode).toBe('primary');
    expect(st.wal_max_entries).toBe(500);
    expect(st.wal_max_bytes).toBeGreaterThan(0);
    expect(st.wal_first_retained).toBeGreaterThanOrEqual(1);
    expect(st.wal_first_retained).toBeLessThanOrEqual(st.last_dr_wal);
    expect(st.wal_retained_bytes).toBeGreaterThan(0);
  }, 30_000);
});
