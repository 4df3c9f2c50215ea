/**
 * Issue 27 item 2: audit devices, as Vault's. sys/audit list, enable and disable (sudo, root
 * namespace), Vault's 400s with nothing changed, sys/audit-hash equal to the hash the file holds,
 * a request and a response entry per audited request with every secret hashed, and fail closed:
 * a device that cannot write refuses the request (500) and nothing is done.
 */
import { readFile, symlink, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { NotFound } from '../../src/core/errors.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
let dir: string;
beforeAll(async () => {
  n = await startTestNode();
  dir = join(n.dataDir, 'data', 'audit');
  expect((await n.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
}, 30_000);
afterAll(async () => n.stop());

const lines = async (file: string): Promise<Record<string, any>[]> =>
  (await readFile(join(dir, file), 'utf8')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, any>);

describe('sys/audit', () => {
  it('enables, lists in Vault shape (also at the top level), and disables a file device', async () => {
    expect((await n.call('PUT', 'sys/audit/file', { type: 'file', description: 'd', options: { file_path: 'list.log' } })).status).toBe(204);
    const r = await n.call('GET', 'sys/audit');
    expect(r.status).toBe(200);
    const want = { type: 'file', description: 'd', options: { file_path: 'list.log' }, local: false, path: 'file/' };
    expect(r.body.data['file/']).toEqual(want);
    expect(r.body['file/']).toEqual(want);
    expect((await n.call('DELETE', 'sys/audit/file')).status).toBe(204);
    expect((await n.call('GET', 'sys/audit')).body.data).toEqual({});
  });

  it("refuses with Vault's 400s and changes nothing", async () => {
    expect((await n.call('PUT', 'sys/audit/one', { type: 'file', options: { file_path: 'one.log' } })).status).toBe(204);
    const refused = async (path: string, body: unknown, text: RegExp): Promise<void> => {
      const r = await n.call('PUT', path, body);
      expect(r.status).toBe(400);
      expect(r.body.errors.join(' ')).toMatch(text);
    };
    await refused('sys/audit/one', { type: 'file', options: { file_path: 'other.log' } }, /path already in use/);
    await refused('sys/audit/two', { type: 'syslog' }, /unknown backend type/);
    await refused('sys/audit/two', { type: 'file' }, /file_path is required/);
    await refused('sys/audit/two', { type: 'file', options: { file_path: 'x.log', format: 'jsonx' } }, /jsonx formatting is not supported/);
    await refused('sys/audit/two', { type: 'file', options: { file_path: '/tmp/outside.log' } }, /outside this node's audit directory/);
    await refused('sys/audit/two', { type: 'file', options: { file_path: '../escape.log' } }, /outside this node's audit directory/);
    await mkdir(dir, { recursive: true });
    await symlink('/tmp', join(dir, 'link')).catch(() => undefined);
    await refused('sys/audit/two', { type: 'file', options: { file_path: 'link/x.log' } }, /symbolic link/);
    const listed = (await n.call('GET', 'sys/audit')).body.data;
    expect(Object.keys(listed)).toEqual(['one/']);
    // Sudo: a token without it is refused.
    const t = (await n.call('POST', 'auth/token/create', { policies: ['default'] })).body.auth.client_token as string;
    expect((await n.call('GET', 'sys/audit', undefined, { token: t })).status).toBe(403);
    expect((await n.call('DELETE', 'sys/audit/one')).status).toBe(204);
  });

  it('writes a request and a response entry per request, every secret hashed as sys/audit-hash hashes it', async () => {
    expect((await n.call('PUT', 'sys/audit/hashed', { type: 'file', options: { file_path: 'hashed.log' } })).status).toBe(204);
    expect((await n.call('POST', 'secret/data/audited', { data: { password: 'hunter2-secret' } })).status).toBe(200);
    const read = await n.call('GET', 'secret/data/audited');
    expect(read.body.data.data.password).toBe('hunter2-secret');
    const text = await readFile(join(dir, 'hashed.log'), 'utf8');
    expect(text).not.toContain('hunter2-secret');
    expect(text).not.toContain(n.rootToken);
    const all = await lines('hashed.log');
    const write = all.filter((e) => e.request.path === 'secret/data/audited' && e.request.operation === 'update');
    expect(write.map((e) => e.type)).toEqual(['request', 'response']);
    const hash = (await n.call('POST', 'sys/audit-hash/hashed', { input: 'hunter2-secret' })).body.data.hash as string;
    expect(hash).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(write[0]!.request.data.data.password).toBe(hash);
    expect(write[0]!.auth.client_token).toBe((await n.call('POST', 'sys/audit-hash/hashed', { input: n.rootToken })).body.data.hash);
    expect(write[0]!.request.mount_type).toBe('kv');
    const readBack = all.filter((e) => e.request.path === 'secret/data/audited' && e.request.operation === 'read' && e.type === 'response');
    expect(readBack[0]!.response.data.data.password).toBe(hash);
    expect((await n.call('DELETE', 'sys/audit/hashed')).status).toBe(204);
  });

  it('with log_raw, writes the values in the clear', async () => {
    expect((await n.call('PUT', 'sys/audit/raw', { type: 'file', options: { file_path: 'raw.log', log_raw: 'true' } })).status).toBe(204);
    expect((await n.call('POST', 'secret/data/raw', { data: { v: 'clear-value-1' } })).status).toBe(200);
    expect(await readFile(join(dir, 'raw.log'), 'utf8')).toContain('clear-value-1');
    expect((await n.call('DELETE', 'sys/audit/raw')).status).toBe(204);
  });

  it('records a denied request (its request entry with the error, no response), its token hashed', async () => {
    expect((await n.call('PUT', 'sys/audit/denied', { type: 'file', options: { file_path: 'denied.log' } })).status).toBe(204);
    const t = (await n.call('POST', 'auth/token/create', { policies: ['default'] })).body.auth.client_token as string;
    expect((await n.call('GET', 'secret/data/forbidden', undefined, { token: t })).status).toBe(403);
    expect((await n.call('GET', 'sys/audit', undefined, { token: 'not-a-token' })).status).toBe(403);
    const text = await readFile(join(dir, 'denied.log'), 'utf8');
    expect(text).not.toContain(t);
    expect(text).not.toContain('not-a-token');
    const denied = (await lines('denied.log')).filter((e) => e.request.path === 'secret/data/forbidden' || (e.request.path === 'sys/audit' && e.error !== ''));
    expect(denied.map((e) => [e.type, e.request.path, e.error])).toEqual([
      ['request', 'secret/data/forbidden', 'permission denied'],
      ['request', 'sys/audit', 'permission denied'],
    ]);
    expect((await n.call('DELETE', 'sys/audit/denied')).status).toBe(204);
  });

  it('creates its file with mode 0600 unless told, and writes the prefix before each line', async () => {
    expect((await n.call('PUT', 'sys/audit/pre', { type: 'file', options: { file_path: 'sub/pre.log', prefix: 'AUDIT: ' } })).status).toBe(204);
    expect((await n.call('PUT', 'sys/audit/open', { type: 'file', options: { file_path: 'open.log', mode: '0644' } })).status).toBe(204);
    expect((await stat(join(dir, 'sub', 'pre.log'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'open.log'))).mode & 0o777).toBe(0o644);
    const text = await readFile(join(dir, 'sub', 'pre.log'), 'utf8');
    const all = text.split('\n').filter((l) => l !== '');
    expect(all.length).toBeGreaterThan(0);
    for (const l of all) {
      expect(l.startsWith('AUDIT: ')).toBe(true);
      expect(JSON.parse(l.slice('AUDIT: '.length)).type).toMatch(/^(request|response)$/);
    }
    expect((await n.call('DELETE', 'sys/audit/pre')).status).toBe(204);
    expect((await n.call('DELETE', 'sys/audit/open')).status).toBe(204);
  });

  it('does not audit health or seal status', async () => {
    expect((await n.call('PUT', 'sys/audit/quiet', { type: 'file', options: { file_path: 'quiet.log' } })).status).toBe(204);
    await n.call('GET', 'sys/health');
    await n.call('GET', 'sys/seal-status');
    await n.call('GET', 'sys/leader');
    expect((await lines('quiet.log')).filter((e) => /health|seal-status|leader/.test(e.request.path))).toEqual([]);
    expect((await n.call('DELETE', 'sys/audit/quiet')).status).toBe(204);
  });
});

describe('across a seal', () => {
  it('keeps the device table (stored) and opens its file again at unseal, with the same salt', async () => {
    expect((await n.call('PUT', 'sys/audit/kept', { type: 'file', options: { file_path: 'kept.log' } })).status).toBe(204);
    const hash = (await n.call('POST', 'sys/audit-hash/kept', { input: 'v' })).body.data.hash as string;
    expect((await n.call('PUT', 'sys/seal')).status).toBe(204);
    for (const key of n.unsealKeys.slice(0, 2)) expect((await n.call('PUT', 'sys/unseal', { key })).status).toBe(200);
    expect(Object.keys((await n.call('GET', 'sys/audit')).body.data)).toEqual(['kept/']);
    expect((await n.call('POST', 'sys/audit-hash/kept', { input: 'v' })).body.data.hash).toBe(hash);
    expect((await n.call('POST', 'secret/data/after-unseal', { data: { k: 'v' } })).status).toBe(200);
    const after = (await lines('kept.log')).filter((e) => e.request.path === 'secret/data/after-unseal');
    expect(after.map((e) => e.type)).toEqual(['request', 'response']);
    expect(after[0]!.request.data.data.k).toBe(hash);
    expect((await n.call('DELETE', 'sys/audit/kept')).status).toBe(204);
  });
});

describe('fail closed', () => {
  it('refuses a request no device could record (500) and does nothing', async () => {
    // /dev/full: every write fails with ENOSPC; mode 0000 leaves the device's mode alone.
    const f = await startTestNode({ auditDir: '/dev' });
    try {
      expect((await f.call('PUT', 'sys/audit/sink', { type: 'file', options: { file_path: 'discard' } })).status).toBe(204);
      expect((await f.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
      expect((await f.call('PUT', 'sys/audit/full', { type: 'file', options: { file_path: 'full', mode: '0000' } })).status).toBe(204);
      // One device that writes is enough, as in Vault.
      expect((await f.call('POST', 'secret/data/kept', { data: { a: 'b' } })).status).toBe(200);
      // The sink's disable is recorded before it runs (by the sink) but its response only by the
      // failing device: applied, and a 500 that says so.
      const d = await f.call('DELETE', 'sys/audit/sink');
      expect(d.status).toBe(500);
      expect(d.body.errors.join(' ')).toMatch(/the operation was applied, but no enabled audit device could record its response/);
      expect(f.node.core.audit.list().map((e) => e.path)).toEqual(['full/']);
      const w = await f.call('POST', 'secret/data/never', { data: { a: 'b' } });
      expect(w.status).toBe(500);
      expect(w.body.errors.join(' ')).toMatch(/no enabled audit device could record this request, so it was refused and nothing was done/);
      // Read past the HTTP layer (every request is refused now): the write did not happen.
      await expect(f.node.core.logical('', 'secret/data/never', 'read', {})).rejects.toThrow(NotFound);
      expect((await f.node.core.logical('', 'secret/data/kept', 'read', {}))?.response?.data).toMatchObject({ data: { a: 'b' } });
      expect((await f.call('GET', 'sys/audit')).status).toBe(500);
    } finally {
      await f.stop();
    }
  }, 30_000);
});

describe('on a performance secondary', () => {
  it('opens its own file for a replicated device, audits a forwarded write on both nodes with the same salt, and refuses a non-local enable', async () => {
    const [p, s] = await Promise.all([startTestNode(), startTestNode()]);
    try {
      expect((await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
      await joinSecondary(p, s, 'audit-perf', 'performance');
      expect((await p.call('PUT', 'sys/audit/pf', { type: 'file', options: { file_path: 'pf.log' } })).status).toBe(204);
      await eventually(async () => expect(Object.keys((await s.call('GET', 'sys/audit')).body.data ?? {})).toEqual(['pf/']));
      const refused = await s.call('PUT', 'sys/audit/mine', { type: 'file', options: { file_path: 'mine.log' } });
      expect(refused.status).toBe(400);
      expect((await s.call('PUT', 'sys/audit/mine', { type: 'file', local: true, options: { file_path: 'mine.log' } })).status).toBe(204);
      expect((await s.call('PUT', 'secret/data/fwd', { data: { v: 'forwarded-value' } })).status).toBe(200);
      const hash = (await p.call('POST', 'sys/audit-hash/pf', { input: 'forwarded-value' })).body.data.hash as string;
      expect((await s.call('POST', 'sys/audit-hash/pf', { input: 'forwarded-value' })).body.data.hash).toBe(hash);
      const read = async (n: TestNode, file: string): Promise<Record<string, any>[]> =>
        (await readFile(join(n.dataDir, 'data', 'audit', file), 'utf8')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, any>);
      const onS = (await read(s, 'pf.log')).filter((e) => e.request.path === 'secret/data/fwd');
      expect(onS.map((e) => e.type)).toEqual(['request', 'response']);
      expect(onS[0]!.request.data.data.v).toBe(hash);
      expect((await read(s, 'mine.log')).filter((e) => e.request.path === 'secret/data/fwd').map((e) => e.type)).toEqual(['request', 'response']);
      const onP = (await read(p, 'pf.log')).filter((e) => e.request.path === 'secret/data/fwd');
      expect(onP.map((e) => e.type)).toEqual(['request', 'response']);
      expect(onP[0]!.request.forwarded_from).toEqual(expect.any(String));
      expect(onP[0]!.request.data.data.v).toBe(hash);
    } finally {
      await Promise.all([p.stop(), s.stop()]);
    }
  }, 60_000);
});
