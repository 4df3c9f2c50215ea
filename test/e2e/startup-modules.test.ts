/**
 * What a node process loads before it does anything: every test that starts a node, and every
 * operator's start, pays for each module. @peculiar/x509 (about 150 CommonJS modules with its
 * asn1 packages and tsyringe, ~0.2 s of CPU here) is loaded only when a certificate is first made
 * (src/replication/pki.ts), so importing the node's composition root must not load it. Nor
 * the pg driver, which only a node on PostgreSQL storage needs (src/storage/postgres.ts, loadPg).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../harness/index.js';

const run = promisify(execFile);

test('importing the built node loads neither @peculiar/x509 nor pg; making a CA, or opening PostgreSQL, does', async () => {
  const script = `
    import { createRequire } from 'node:module';
    const cache = () => Object.keys(createRequire(import.meta.url).cache);
    const loaded = () => cache().filter((k) => k.includes('/@peculiar/'));
    const pgLoaded = () => cache().filter((k) => k.includes('/node_modules/pg/')).length;
    await import(${JSON.stringify(join(repoRoot, 'dist/node/node.js'))});
    const atStart = loaded().length;
    const pgAtStart = pgLoaded();
    const { loadPg } = await import(${JSON.stringify(join(repoRoot, 'dist/storage/postgres.js'))});
    const { Pool } = await loadPg();
    const { createCa } = await import(${JSON.stringify(join(repoRoot, 'dist/replication/pki.js'))});
    const ca = await createCa({ clusterId: 'c1', now: Date.now() });
    console.log(JSON.stringify({ atStart, afterCa: loaded().length, pem: ca.certPem.startsWith('-----BEGIN CERTIFICATE-----'), pgAtStart, pgAfter: pgLoaded(), pool: typeof Pool }));
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot, timeout: 30_000 });
  const r = JSON.parse(stdout.trim().split('\n').pop() as string) as { atStart: number; afterCa: number; pem: boolean; pgAtStart: number; pgAfter: number; pool: string };
  expect(r.atStart).toBe(0);
  expect(r.afterCa).toBeGreaterThan(0);
  expect(r.pem).toBe(true);
  expect(r.pgAtStart).toBe(0);
  expect(r.pgAfter).toBeGreaterThan(0);
  expect(r.pool).toBe('function');
});
