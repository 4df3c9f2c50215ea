/**
 * The HTTP floor: the same load generator as scripts/bench.mjs (N sequential keep-alive clients
 * writing ~1 KiB JSON bodies, httpWrites) against servers that answer at once without storing
 * anything (scripts/bench-floor-server.mjs): node:http alone, and express as it ships with one
 * catch-all handler behind the LIST framer (Tessera's listener is that, its requests born with
 * express's prototypes: `express-tessera`, measured by bench-hot). Whatever a durable
 * replicated write costs comes on top of these, so their writes/s bound Tessera's on this
 * machine, and their ratio to PostgreSQL's says how much of a gap the HTTP shell alone leaves.
 *
 *   node scripts/bench-floor.mjs [--seconds 3]      # 16 and 4 clients, both shells
 *   import { benchFloor } from './bench-floor.mjs'; await benchFloor({ seconds: 3 });
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { httpWrites, startDevNode } from './bench.mjs';
import { table } from './bench-util.mjs';

const serverJs = fileURLToPath(new URL('./bench-floor-server.mjs', import.meta.url));
export const FLOOR_SHELLS = ['node', 'express'];

/** Rows of { shell, clients, writesPerSec, nodeCpuUsPerWrite, p50Ms, p99Ms }. */
export async function benchFloor({ seconds = 3, clients = [16, 4] } = {}) {
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-floor-'));
  const rows = [];
  try {
    for (const shell of FLOOR_SHELLS) {
      const server = await startDevNode(scratch, { script: serverJs, env: { BENCH_FLOOR_MODE: shell } });
      try {
        for (const n of clients) {
          process.stderr.write(`HTTP floor: no-op ${shell} server, ${n} clients, ${seconds} s...\n`);
          const r = await httpWrites(server, n, seconds);
          rows.push({ shell, clients: n, writesPerSec: r.writesPerSec, nodeCpuUsPerWrite: r.nodeCpuUsPerWrite, p50Ms: r.p50Ms, p99Ms: r.p99Ms });
        }
      } finally {
        await server.stop();
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return rows;
}

export function floorTable(rows) {
  return table(
    ['no-op server', 'clients', 'requests/s', 'server CPU us/request', 'p50 ms', 'p99 ms'],
    rows.map((r) => [r.shell, String(r.clients), r.writesPerSec.toFixed(0), r.nodeCpuUsPerWrite.toFixed(0), r.p50Ms.toFixed(2), r.p99Ms.toFixed(2)]),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { seconds: { type: 'string' } } });
  benchFloor({ seconds: Number(values.seconds ?? process.env.BENCH_SECONDS ?? 3) }).then(
    (rows) => {
      console.log(floorTable(rows));
      process.exit(0);
    },
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
