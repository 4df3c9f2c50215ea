/**
 * Batch tokens on in-process nodes with real gRPC and LevelDB: on normal paths (lookup-self shape,
 * expiry, no children, the namespace boundary), and as DR operation tokens that a DR secondary
 * accepts without share holders when the token's replicated policies grant `update` on the path
 * called. The runbook's "Pre-stage a DR operation batch token" commands run here through the CLI
 * (in-process `main`), as written in docs/failover-runbook.md.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { runCli } from '../../src/cli/testing/run-cli.js';
import { eventually, repoRoot } from '../harness/index.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, drStatus, inSync } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const nodes: TestNode[] = [];
let dir = '';
async function node(logger?: pino.Logger): Promise<TestNode> {
  const n = await startTestNode(logger ? { logger } : {});
  nodes.push(n);
  return n;
}
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-batch-'));
});
afterEach(async () => {
  for (const n of nodes.splice(0).reverse()) await n.stop();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The runbook's section, read from the file so that what it says is what runs here. */
let RUNBOOK = '';
let DR_OPS_HCL = '';
beforeAll(async () => {
  const doc = await readFile(join(repoRoot, 'docs/failover-runbook.md'), 'utf8');
  const at = doc.indexOf('## Pre-stage a DR operation batch token');
  expect(at).toBeGreaterThan(0);
  RUNBOOK = doc.slice(at, doc.indexOf('\n## ', at + 1));
  const hcl = /cat > dr-ops\.hcl <<'EOF'\n([\s\S]*?\n)EOF\n/.exec(RUNBOOK);
  DR_OPS_HCL = hcl?.[1] ?? '';
  expect(DR_OPS_HCL).toContain('path "sys/replication/dr/secondary/promote"');
});

/**
 * A `tessera ...` command of the runbook's section, as written there (it must be), with $P, $S,
 * $DRBT and the HCL file filled in; returns the arguments after `tessera`.
 */
function runbook(command: string, vars: Record<string, string>): string[] {
  expect(RUNBOOK).toContain(command);
  return command.split(' ').slice(1).map((arg) => arg.replace(/\$([A-Z]+)/g, (_, v: string) => vars[v] ?? `$${v}`).replace('@dr-ops.hcl', `@${vars['HCL'] ?? ''}`));
}

/** `tessera <args>` with the runbook's environment (VAULT_TOKEN = the primary's root token). */
async function tessera(args: string[], token: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return runCli(args, { env: { VAULT_TOKEN: token } });
}

async function batchToken(n: TestNode, policies: string[], ttl: string, opts: { ns?: string; path?: string } = {}): Promise<string> {
  const r = await n.call('POST', opts.path ?? 'auth/token/create-orphan', { type: 'batch', policies, ttl }, opts.ns ? { headers: { 'X-Vault-Namespace': opts.ns } } : {});
  expect(r.status).toBe(200);
  return r.body.auth.client_token as string;
}

async function policy(n: TestNode, name: string, text: string): Promise<void> {
  expect((await n.call('POST', `sys/policies/acl/${name}`, { policy: text })).status).toBe(204);
}

const path = (p: string) => `sys/policies/acl/${p}`;

describe('batch tokens on normal paths', () => {
  it('authenticate with Vault\'s batch shape, cannot make children, expire, and hold their namespace', async () => {
    const n = await node();
    await policy(n, 'reader', 'path "sys/policies/acl/*" { capabilities = ["read", "list"] }\npath "auth/token/create" { capabilities = ["update"] }');
    const created = await n.call('POST', 'auth/token/create', { type: 'batch', policies: ['reader'], ttl: '1h' });
    expect(created.status).toBe(200);
    expect(created.body.auth).toMatchObject({ accessor: '', token_type: 'batch', renewable: false, orphan: false, lease_duration: 3600, policies: ['default', 'reader'] });
    const t = created.body.auth.client_token as string;
    expect(t).toMatch(/^hvb\./);

    const self = await n.call('GET', 'auth/token/lookup-self', undefined, { token: t });
    expect(self.status).toBe(200);
    expect(self.body.data).toMatchObject({ id: t, type: 'batch', accessor: '', renewable: false, num_uses: 0, path: 'auth/token/create', policies: ['default', 'reader'] });
    expect(self.body.data.ttl).toBeGreaterThan(3500);
    // Its policies apply, and only they.
    expect((await n.call('GET', path('reader'), undefined, { token: t })).status).toBe(200);
    expect((await n.call('GET', 'sys/mounts', undefined, { token: t })).status).toBe(403);
    // No children, whatever its policies say; no self-revocation (Vault's 400s).
    const child = await n.call('POST', 'auth/token/create', { policies: ['default'] }, { token: t });
    expect(child.status).toBe(400);
    expect(child.body.errors).toEqual(['batch tokens cannot create more tokens']);
    expect((await n.call('POST', 'auth/token/revoke-self', {}, { token: t })).body.errors).toEqual(['batch tokens cannot be revoked']);
    expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: t })).status).toBe(200);
    // Refusals as Vault words them.
    expect((await n.call('POST', 'auth/token/create', { type: 'batch', policies: ['root'] })).body.errors).toEqual(['batch tokens cannot be root tokens']);
    expect((await n.call('POST', 'auth/token/create', { type: 'batch', num_uses: 2 })).body.errors).toEqual(['batch tokens cannot have "num_uses" set']);

    // Expiry: accepted, then refused.
    // Expiry counts from the whole second the token was made in: 3 s leaves room on a loaded machine.
    const short = await batchToken(n, ['reader'], '3s');
    expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: short })).status).toBe(200);
    await eventually(async () => expect((await n.call('GET', 'auth/token/lookup-self', undefined, { token: short })).status).toBe(403), { timeoutMs: 10_000, intervalMs: 200 });
    expect((await n.call('GET', path('reader'), undefined, { token: short })).status).toBe(403);

    // Namespace boundary: a token of team/ reaches team/ (and below), not the root or a sibling.
    for (const ns of ['team', 'other']) expect((await n.call('POST', `sys/namespaces/${ns}`, {})).status).toBe(200);
    expect((await n.call('POST', 'sys/namespaces/app', {}, { headers: { 'X-Vault-Namespace': 'team' } })).status).toBe(200);
    expect((await n.call('POST', path('reader'), { policy: 'path "sys/policies/acl/*" { capabilities = ["read"] }\npath "app/sys/policies/acl/*" { capabilities = ["read"] }' }, { headers: { 'X-Vault-Namespace': 'team' } })).status).toBe(204);
    const teamTok = await batchToken(n, ['reader'], '1h', { ns: 'team' });
    const asTeam = (ns: string | undefined, p: string) => n.call('GET', p, undefined, { token: teamTok, ...(ns ? { headers: { 'X-Vault-Namespace': ns } } : {}) });
    expect((await asTeam('team', 'auth/token/lookup-self')).body.data).toMatchObject({ type: 'batch', accessor: '' });
    expect((await asTeam('team', path('reader'))).status).toBe(200);
    expect((await asTeam(undefined, path('reader'))).status).toBe(403);
    expect((await asTeam('other', path('reader'))).status).toBe(403);
    expect((await asTeam('team/app', path('default'))).status).toBe(200); // a child namespace, by its policy's app/ rule
    // Lookup and revoke from a sibling namespace treat it as unknown and change nothing.
    const fromOther = await n.call('POST', 'auth/token/lookup', { token: teamTok }, { headers: { 'X-Vault-Namespace': 'other' } });
    expect(fromOther.status).toBe(403);
    expect((await n.call('POST', 'auth/token/revoke', { token: teamTok }, { headers: { 'X-Vault-Namespace': 'other' } })).status).toBe(204);
    expect((await asTeam('team', path('reader'))).status).toBe(200);
  });
});

describe('batch tokens as DR operation tokens', () => {
  it('are refused on a DR secondary when the policy lacks the path, expired or revoked; nothing changes', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => { lines.push(chunk.toString('utf8')); done(); } });
    const p = await node();
    const s = await node(pino({ level: 'info' }, sink));
    await joinSecondary(p, s, 's');
    await policy(p, 'dr-ops', DR_OPS_HCL);
    await policy(p, 'dr-check', 'path "sys/replication/dr/secondary/merkle-check" { capabilities = ["update"] }');
    const checkOnly = await batchToken(p, ['dr-check'], '1h');
    const revoked = await batchToken(p, ['dr-ops', 'dr-check'], '1h');
    await inSync(p, s);
    const call = (route: string, t: string) => s.call('POST', `${DR}/secondary/${route}`, { dr_operation_token: t }, { token: null });

    // (b) A valid token whose policy lacks promote: 403, still a secondary; the path it has works.
    const refused = await call('promote', checkOnly);
    expect(refused.status).toBe(403);
    expect(refused.body.errors).toEqual(['permission denied']);
    expect((await drStatus(s)).mode).toBe('secondary');
    expect((await call('merkle-check', checkOnly)).status).toBe(200);
    expect((await call('merkle-check', checkOnly)).status).toBe(200); // verified, never spent

    // (c) Accepted while live, refused once expired. Made now: a batch token is not stored, so
    // there is nothing of it to replicate (the key and policies already are).
    const expiring = await batchToken(p, ['dr-ops', 'dr-check'], '3s');
    expect((await call('merkle-check', expiring)).status).toBe(200);
    await eventually(async () => expect((await call('merkle-check', expiring)).status).toBe(403), { timeoutMs: 15_000, intervalMs: 200 });
    expect((await call('promote', expiring)).status).toBe(403);
    expect((await drStatus(s)).mode).toBe('secondary');

    // (d) Revoked on the primary (the runbook's command): refused once the deny list replicated.
    expect((await call('merkle-check', revoked)).status).toBe(200);
    const rv = await tessera(runbook('tessera write -address=$P auth/token/revoke token=$DRBT', { P: p.apiAddr, DRBT: revoked }), p.rootToken);
    expect(rv.code).toBe(0);
    await inSync(p, s);
    const r = await call('promote', revoked);
    expect(r.status).toBe(403);
    expect(r.body.errors).toEqual(['invalid DR operation token']);
    expect((await call('merkle-check', revoked)).status).toBe(403);
    const st = await drStatus(s);
    expect(st.mode).toBe('secondary');
    // A token that is not ours at all, and one that cannot be deleted here.
    expect((await call('promote', 'hvb.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status).toBe(403);
    expect((await call('operation-token/delete', checkOnly)).status).toBe(400);
    // Every use is in the audit trail, by type and path, and no token is in any log line.
    const uses = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['op'] === 'dr/operation-token/use');
    expect(uses).toContainEqual(expect.objectContaining({ outcome: 'refused', error_code: 'permission_denied', token_type: 'batch', path: `${DR}/secondary/promote` }));
    expect(uses).toContainEqual(expect.objectContaining({ outcome: 'ok', token_type: 'batch', path: `${DR}/secondary/merkle-check` }));
    for (const t of [checkOnly, expiring, revoked]) expect(lines.filter((l) => l.includes(t.slice(4, 40)))).toEqual([]);
    // The replication set is intact: the secondary still follows the primary.
    expect((await p.call('POST', 'sys/policies/acl/after', { policy: 'path "x" { capabilities = ["read"] }' })).status).toBe(204);
    await inSync(p, s, { streaming: true });
  });

  it('promotes a DR secondary with no share holders (the runbook\'s pre-staged batch token)', async () => {
    const p = await node();
    const s = await node();
    await joinSecondary(p, s, 's');
    const hcl = join(dir, 'dr-ops.hcl');
    await writeFile(hcl, DR_OPS_HCL);
    const vars = { P: p.apiAddr, S: s.apiAddr, HCL: hcl };
    // The runbook, in order.
    expect((await tessera(runbook('tessera write -address=$P sys/policies/acl/dr-ops policy=@dr-ops.hcl', vars), p.rootToken)).code).toBe(0);
    const made = await tessera(runbook('tessera write -address=$P -format=json auth/token/create-orphan type=batch policies=dr-ops no_default_policy=true ttl=720h', vars), p.rootToken);
    expect(made.code).toBe(0);
    const drbt = JSON.parse(made.stdout).auth.client_token as string; // `| jq -r .auth.client_token`
    expect(drbt).toMatch(/^hvb\./);
    const looked = await tessera(runbook('tessera write -address=$P -format=json auth/token/lookup token=$DRBT', { ...vars, DRBT: drbt }), p.rootToken);
    expect(looked.code).toBe(0);
    expect(JSON.parse(looked.stdout).data).toMatchObject({ type: 'batch', orphan: true, policies: ['dr-ops'], accessor: '' });
    await inSync(p, s);
    // The primary is gone; nobody holds shares; the batch token promotes.
    await p.stop();
    nodes.splice(nodes.indexOf(p), 1);
    const promoted = await tessera(runbook('tessera write -address=$S sys/replication/dr/secondary/promote dr_operation_token=$DRBT', { ...vars, DRBT: drbt }), '');
    expect(promoted.code).toBe(0);
    await eventually(async () => expect((await drStatus(s)).mode).toBe('primary'), { timeoutMs: 15_000 });
    // The new primary takes writes (with the old primary's root token: tokens replicate to DR).
    expect((await s.call('POST', 'sys/policies/acl/after-failover', { policy: 'path "x" { capabilities = ["read"] }' }, { token: p.rootToken })).status).toBe(204);
  });
});
