/**
 * The raw durable-write ceiling of LevelDB on this machine: sequential batches of N puts of
 * `valueBytes` random bytes each, every batch with sync:true (fsync), for `seconds` per size.
 * Tessera's HTTP writes at N concurrent clients are compared against the N-sized row.
 *
 *   node scripts/bench-leveldb.mjs            # prints a table
 *   import { leveldbCeiling } from './bench-leveldb.mjs';
 *   const rows = await leveldbCeiling({ batchSizes: [1, 4, 16], seconds: 3 });
 *   // [{ batchSize: 1, batches, seconds, batchesPerSec, valuesPerSec, meanBatchMs }, ...]
 */
import { ClassicLevel } from 'classic-level';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * @param {{ dir?: string, batchSizes?: number[], valueBytes?: number, seconds?: number }} [opts]
 *   `dir`: parent for the scratch directory (default: the OS temp dir); the scratch directory is
 *   created fresh and removed afterwards.
 * @returns {Promise<Array<{ batchSize: number, batches: number, seconds: number,
 *   batchesPerSec: number, valuesPerSec: number, meanBatchMs: number }>>}
 */
export async function leveldbCeiling({ dir, batchSizes = [1, 4, 16], valueBytes = 1024, seconds = 3 } = {}) {
  const scratch = await mkdtemp(join(dir ?? tmpdir(), 'tessera-bench-leveldb-'));
  const db = new ClassicLevel(scratch, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
  // Random bytes so snappy cannot shrink the writes; values are distinct slices of one pool.
  const pool = randomBytes(valueBytes * 64);
  const value = (i) => {
    const off = (i * 97) % (pool.length - valueBytes);
    return pool.subarray(off, off + valueBytes);
  };
  const rows = [];
  try {
    await db.open();
    for (const batchSize of batchSizes) {
      const prefix = `bench/${String(batchSize).padStart(4, '0')}/`;
      let seq = 0;
      const writeOne = () => {
        const ops = [];
        for (let j = 0; j < batchSize; j++, seq++) {
          ops.push({ type: 'put', key: prefix + String(seq).padStart(10, '0'), value: value(seq) });
        }
        return db.batch(ops, { sync: true });
      };
      // Warm-up: the first fsyncs of a fresh log file are not representative.
      for (let i = 0; i < 20; i++) await writeOne();
      let batches = 0;
      const start = process.hrtime.bigint();
      const budget = BigInt(Math.round(seconds * 1e9));
      let elapsed = 0n;
      while (elapsed < budget) {
        await writeOne();
        batches++;
        elapsed = process.hrtime.bigint() - start;
      }
      const secs = Number(elapsed) / 1e9;
      rows.push({
        batchSize,
        batches,
        seconds: secs,
        batchesPerSec: batches / secs,
        valuesPerSec: (batches * batchSize) / secs,
        meanBatchMs: (secs * 1000) / batches,
      });
    }
  } finally {
    await db.close();
    await rm(scratch, { recursive: true, force: true });
  }
  return rows;
}

function printTable(rows, valueBytes) {
  const header = ['batch size', 'batches/s (fsync)', `values/s (${valueBytes} B)`, 'mean batch ms'];
  const body = rows.map((r) => [
    String(r.batchSize),
    r.batchesPerSec.toFixed(0),
    r.valuesPerSec.toFixed(0),
    r.meanBatchMs.toFixed(3),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells) => cells.map((c, i) => c.padStart(widths[i])).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of body) console.log(line(row));
}

const runDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (runDirectly) {
  const valueBytes = 1024;
  const rows = await leveldbCeiling({ batchSizes: [1, 4, 16], valueBytes, seconds: 3 });
  console.log(`LevelDB durable-write ceiling (classic-level, sync:true, sequential batches, ${valueBytes} B values)`);
  printTable(rows, valueBytes);
}
