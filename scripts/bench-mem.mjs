/**
 * Memory of benchmarked processes, from /proc (Linux; elsewhere every figure is NaN).
 *
 * A process tree's memory is reported two ways: RSS summed over the processes, and PSS
 * (proportional set size, /proc/PID/smaps_rollup) summed over them. For PostgreSQL, whose backends
 * all map the same shared buffers, summed RSS counts those pages once per process; summed PSS counts
 * each page once, so PSS is the figure compared between PostgreSQL and Tessera (for Tessera's one
 * process PSS and RSS differ only by shared libraries).
 *
 * RSS is also split: `anon` (the heap, V8's and native: memory only the process can give back)
 * and the rest, file-backed pages mapped into the process (shared libraries, and LevelDB's
 * read-only mmaps of its table files: clean page cache the kernel may drop at any time).
 */
import { readdir, readFile } from 'node:fs/promises';
import { procStat } from './bench-util.mjs';

const kb = (text, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text)?.[1] ?? NaN);

/** Children (recursively) of `pid`, itself first. */
async function tree(pid) {
  const parents = new Map();
  for (const name of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(name)) continue;
    const f = await procStat(name); // undefined: exited meanwhile
    if (f !== undefined) parents.set(Number(name), f.ppid);
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) for (const [child, parent] of parents) if (parent === out[i]) out.push(child);
  return out;
}

/** { rssKb, pssKb, anonKb, processes } of `pid` and (with `children`) its descendants. */
export async function memoryOf(pid, { children = false } = {}) {
  const pids = children ? await tree(pid) : [pid];
  let rssKb = 0;
  let pssKb = 0;
  let anonKb = 0;
  let processes = 0;
  for (const p of pids) {
    try {
      const rollup = await readFile(`/proc/${p}/smaps_rollup`, 'utf8');
      rssKb += kb(rollup, 'Rss');
      pssKb += kb(rollup, 'Pss');
      anonKb += kb(rollup, 'Anonymous');
      processes++;
    } catch {
      // exited meanwhile, or no /proc
    }
  }
  return processes === 0 ? { rssKb: NaN, pssKb: NaN, anonKb: NaN, processes } : { rssKb, pssKb, anonKb, processes };
}

/**
 * Samples every `intervalMs` until stop(); `targets` maps a name to { pid, children }.
 * stop() resolves with { name: { maxRssMb, maxPssMb, maxAnonMb, endRssMb, endPssMb, samples } }.
 */
export function sampleMemory(targets, intervalMs = 250) {
  const seen = Object.fromEntries(Object.keys(targets).map((k) => [k, { maxRssKb: NaN, maxPssKb: NaN, maxAnonKb: NaN, end: undefined, samples: 0 }]));
  let stopped = false;
  const once = async () => {
    for (const [name, t] of Object.entries(targets)) {
      const m = await memoryOf(t.pid, t);
      const s = seen[name];
      if (!Number.isFinite(m.rssKb)) continue;
      s.maxRssKb = Number.isFinite(s.maxRssKb) ? Math.max(s.maxRssKb, m.rssKb) : m.rssKb;
      s.maxPssKb = Number.isFinite(s.maxPssKb) ? Math.max(s.maxPssKb, m.pssKb) : m.pssKb;
      s.maxAnonKb = Number.isFinite(s.maxAnonKb) ? Math.max(s.maxAnonKb, m.anonKb) : m.anonKb;
      s.end = m;
      s.samples++;
    }
  };
  const loop = (async () => {
    while (!stopped) {
      await once();
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      await once(); // the end figure is taken at stop, still under the load's footprint
      const mb = (k) => k / 1024;
      return Object.fromEntries(Object.entries(seen).map(([k, s]) => [k, {
        maxRssMb: mb(s.maxRssKb), maxPssMb: mb(s.maxPssKb), maxAnonMb: mb(s.maxAnonKb), endRssMb: mb(s.end?.rssKb ?? NaN), endPssMb: mb(s.end?.pssKb ?? NaN), processes: s.end?.processes ?? 0, samples: s.samples,
      }]));
    },
  };
}

/**
 * CPU milliseconds (user + system) used by `pid` and every process it has started: its own
 * threads, its live descendants, and (cutime, cstime) the children it has already reaped. For
 * PostgreSQL's postmaster this includes backends that ran and exited. NaN off Linux.
 */
export async function treeCpuMs(pid) {
  let ms = 0;
  let seen = 0;
  for (const p of await tree(pid)) {
    const f = await procStat(p); // undefined: exited meanwhile
    if (f === undefined) continue;
    // A live child's own reaped children are in its cutime, and it is in ours only once reaped,
    // so nothing counts twice.
    ms += f.utimeMs + f.stimeMs + f.cutimeMs + f.cstimeMs;
    seen++;
  }
  return seen === 0 ? NaN : ms;
}

/**
 * CPU milliseconds (user + system) of this process's children that have exited and been reaped
 * (cutime + cstime of /proc/self/stat): a load generator run as a child (pgbench), counted once
 * it ends. NaN off Linux.
 */
export async function reapedChildrenCpuMs() {
  const f = await procStat('self');
  return f === undefined ? NaN : f.cutimeMs + f.cstimeMs;
}

/** How many processes `pid` and its descendants are now. */
export async function treeSize(pid) {
  return (await tree(pid)).length;
}

