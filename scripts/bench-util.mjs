/**
 * What the bench scripts share: percentiles, a text table, and a process's CPU time.
 *
 *   percentile([1, 2, 3].sort((a, b) => a - b), 99);   // 3 (NaN for no samples)
 *   console.log(table(['figure', 'ms'], [['p50', '1.20']]));
 *   const ms = await cpuMs(pid);                        // NaN off Linux
 *   const f = await procStat('self');                   // utime is ticks(f.utime), undefined off Linux
 *   const t = await threadCpuMs(pid);                   // Map tid -> { kind, ms }
 */
import { readdir, readFile } from 'node:fs/promises';

/** The p-th percentile of ascending `sorted` (nearest rank); NaN when there are no samples. */
export function percentile(sorted, p) {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Columns padded to their widest cell: the first left-aligned (labels), the rest right-aligned (figures). */
export function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Clock ticks (USER_HZ, 100 on Linux) as milliseconds. */
const TICK_MS = 1000 / 100;

/**
 * The CPU fields of /proc/<path>/stat (a pid, 'self', or '<pid>/task/<tid>'), in milliseconds:
 * utime and stime (this process or thread), cutime and cstime (its children already reaped), and
 * its parent's pid; undefined when it is gone or there is no /proc. The command name is skipped
 * by the last ')', as it may hold spaces and parentheses.
 */
export async function procStat(path) {
  try {
    const stat = await readFile(`/proc/${path}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), utimeMs: Number(f[11]) * TICK_MS, stimeMs: Number(f[12]) * TICK_MS, cutimeMs: Number(f[13]) * TICK_MS, cstimeMs: Number(f[14]) * TICK_MS };
  } catch {
    return undefined;
  }
}

/** CPU milliseconds (user + system, all threads) process `pid` has used; NaN off Linux. */
export async function cpuMs(pid) {
  const f = await procStat(pid);
  return f === undefined ? NaN : f.utimeMs + f.stimeMs;
}

/**
 * CPU ms of each thread of `pid` (/proc/PID/task), with its kind: the main thread (the event loop),
 * libuv's pool (LevelDB reads and writes, fsync), V8's platform workers (GC, compilation), or other
 * (LevelDB's compaction thread, the inspector).
 */
export async function threadCpuMs(pid) {
  const out = new Map();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    try {
      const comm = (await readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8')).trim();
      const f = await procStat(`${pid}/task/${tid}`);
      if (f === undefined) continue;
      const kind = tid === String(pid) ? 'main thread' : /libuv/.test(comm) ? 'libuv pool' : /V8|DefaultWorke/i.test(comm) ? 'V8 workers' : `${comm} ${tid}`;
      out.set(tid, { kind, ms: f.utimeMs + f.stimeMs });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}
