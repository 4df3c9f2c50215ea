/**
 * A bad config stops start-up with a message naming the file, the key and what is wrong.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { useHarness } from '../harness/index.js';

const main = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tessera-cfg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function serve(name: string, text: string | undefined): { status: number | null; stderr: string } {
  const file = join(dir, name);
  if (text !== undefined) writeFileSync(file, text);
  const r = spawnSync(process.execPath, [main, 'server', '-config', file], { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stderr: r.stderr };
}

it.each([
  ['bad-address.hcl', 'storage "leveldb" { path = "/tmp/x" }\nlistener "tcp" {\n address = "nonsense"\n tls_disable = true\n}\n', 'listener.tcp.address'],
  ['no-storage.hcl', 'listener "tcp" {\n address = "127.0.0.1:0"\n tls_disable = true\n}\n', 'storage'],
  ['tls.hcl', 'storage "leveldb" { path = "/tmp/x" }\nlistener "tcp" {\n address = "127.0.0.1:0"\n}\n', 'tls_cert_file'],
  ['syntax.hcl', 'storage "leveldb" {{ path = \n', 'syntax.hcl'],
  ['wrong-type.json', '{"storage": {"leveldb": {"path": 7}}, "listener": {"tcp": {"address": "127.0.0.1:0", "tls_disable": true}}}', 'storage.leveldb.path'],
])('%s is refused, naming the file and the key', (name, text, key) => {
  const r = serve(name, text);
  expect(r.status).toBe(1);
  expect(r.stderr).toContain(join(dir, name));
  expect(r.stderr).toContain(key);
});

it('names a missing file', () => {
  const r = serve('absent.hcl', undefined);
  expect(r.status).toBe(1);
  expect(r.stderr).toMatch(/absent\.hcl.*cannot read/);
});

describe('listener deadlines from the config file', () => {
  const h = useHarness();

  it('http_read_header_timeout closes a silent connection, where the default (10 s) would keep it', async () => {
    const node = await h.startNode({ listener: { http_read_header_timeout: '"1s"', http_idle_timeout: '"2s"' } });
    const { hostname, port } = new URL(node.apiAddr);
    const opened = Date.now();
    const closedAfter = await new Promise<number>((resolve, reject) => {
      const sock = net.connect(Number(port), hostname);
      sock.on('close', () => resolve(Date.now() - opened));
      sock.on('error', reject);
    });
    expect(closedAfter).toBeGreaterThanOrEqual(900);
    expect(closedAfter).toBeLessThan(8_000);
    await node.stop();
  }, 30_000);
});
