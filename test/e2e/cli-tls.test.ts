/**
 * The built CLI against a real node with a TLS listener: -ca-cert, -ca-path, -tls-skip-verify and
 * their TESSERA_/VAULT_ variables; and an https address against a plain-HTTP port fails fast with
 * a message that says so.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createCa, issueLeaf } from '../../src/replication/pki.js';
import { nodeConfig, runCli, spawnNode, useHarness, writeLicense, type NodeProcess } from '../harness/index.js';

const h = useHarness();
let tlsNode: NodeProcess;
let addr: string;
let dir: string;
let caFile: string;

beforeAll(async () => {
  dir = await h.tempDir('tessera-cli-tls-');
  const ca = await createCa({ clusterId: 'cli-tls', now: Date.now() });
  const leaf = await issueLeaf(ca, { name: 'localhost', usage: 'server', ttlDays: 1, now: Date.now() });
  caFile = join(dir, 'ca.pem');
  await writeFile(caFile, ca.certPem);
  await mkdir(join(dir, 'cas'));
  await writeFile(join(dir, 'cas', 'ca.crt'), ca.certPem);
  await writeFile(join(dir, 'tls.crt'), leaf.certPem);
  await writeFile(join(dir, 'tls.key'), leaf.keyPem);
  const { issuerKey: issuer } = await writeLicense(join(dir, 'lic'), { reuse: false });
  const config = nodeConfig(dir, issuer, 'info').replace(
    '  tls_disable = true',
    `  tls_cert_file = ${JSON.stringify(join(dir, 'tls.crt'))}\n  tls_key_file = ${JSON.stringify(join(dir, 'tls.key'))}`,
  );
  expect(config).toContain('tls_cert_file');
  await writeFile(join(dir, 'config.hcl'), config);
  tlsNode = await spawnNode({ args: ['server', '-config', join(dir, 'config.hcl')], ready: 'listening-log' });
  const port = new URL(tlsNode.apiAddr).port;
  addr = `https://localhost:${port}`;
}, 60_000);
afterAll(async () => {
  await tlsNode?.kill('SIGKILL');
});

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, 20_000, { env: { TESSERA_ADDR: addr, ...env } });

test('verifies the node with -ca-cert, -ca-path or the CACERT variables, refuses an unknown CA, and -tls-skip-verify skips', async () => {
  const unknown = await cli(['status']);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/self-signed|unable to verify|certificate/i);
  for (const [args, env] of [
    [['status', `-ca-cert=${caFile}`], {}],
    [['status', `-ca-path=${join(dir, 'cas')}`], {}],
    [['status'], { VAULT_CACERT: caFile }],
    [['status'], { TESSERA_CAPATH: join(dir, 'cas') }],
    [['status'], { TESSERA_CACERT: caFile, VAULT_CACERT: join(dir, 'missing.pem') }],
    [['status', '-tls-skip-verify'], {}],
    [['status'], { VAULT_SKIP_VERIFY: 'true' }],
  ] as const) {
    const r = await cli([...args], env);
    // Not initialised: status answers and exits 2 ("sealed"), which proves the TLS exchange worked.
    expect({ args, env, code: r.code, stderr: r.stderr }).toEqual({ args, env, code: 2, stderr: '' });
    expect(r.stdout).toMatch(/^Initialized\s+false$/m);
  }
  const badBool = await cli(['status'], { VAULT_SKIP_VERIFY: 'maybe' });
  expect(badBool.code).toBe(2);
  expect(badBool.stderr).toMatch(/could not parse SKIP_VERIFY/);
  const missing = await cli(['status', `-ca-cert=${join(dir, 'missing.pem')}`]);
  expect(missing.code).toBe(2);
});

test('an https address against a plain-HTTP port says so, fast', async () => {
  const plain = await h.startNode({ dev: true });
  const port = new URL(plain.apiAddr).port;
  const started = Date.now();
  const r = await runCli(['status'], 20_000, { env: { TESSERA_ADDR: `https://127.0.0.1:${port}` } });
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/server gave HTTP response to HTTPS client.*use http:\/\/127\.0\.0\.1:\d+/);
  expect(Date.now() - started).toBeLessThan(8000);
});
