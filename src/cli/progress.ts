/**
 * How a replication wait shows where a node is: a progress bar on a terminal (cli-progress),
 * plain lines otherwise (one per change of what they say, so a log stays readable). Always on
 * stderr: stdout is for the command's result.
 *
 *   const display = statusDisplay(ctx.io.stderr);
 *   display.show('dr-east', status);   // after every poll
 *   display.stop();
 */
import cliProgress from 'cli-progress';
import type { KindStatus } from '../api/index.js';
import type { Output } from './io.js';

export interface StatusDisplay {
  show(label: string, status: KindStatus): void;
  /** A line of its own (a step finished), kept above the bar. */
  note(text: string): void;
  stop(): void;
}

/** The numbers a display shows, from a status block (0 when the node does not report them). */
export interface Position {
  readonly mode: string;
  readonly state: string;
  /** What the bar counts: applied WAL entries, or keys during a Merkle sync. */
  readonly done: number;
  readonly total: number;
  readonly unit: 'WAL' | 'keys';
  readonly lagEntries: number;
  readonly lagMs: number;
}

const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) || 0 : 0);

export function positionOf(st: KindStatus): Position {
  const r = st as Record<string, unknown>;
  const state = typeof r['state'] === 'string' ? r['state'] : '';
  const sync = r['merkle_sync_progress'] as { sync_total_keys?: number; sync_progress?: number } | undefined;
  const lagEntries = num(r['lag_entries']);
  const lagMs = num(r['lag_ms']);
  if (sync !== undefined && (state === 'merkle-sync' || state === 'merkle-diff')) {
    return { mode: st.mode, state, done: num(sync.sync_progress), total: num(sync.sync_total_keys), unit: 'keys', lagEntries, lagMs };
  }
  const applied = num(r['last_remote_wal']);
  const primaryLast = Math.max(num(r['primary_last_wal']), applied);
  return { mode: st.mode, state, done: applied, total: primaryLast, unit: 'WAL', lagEntries, lagMs };
}

export function describePosition(p: Position): string {
  const progress = p.total > 0 ? ` ${p.unit === 'WAL' ? 'applied' : 'synced'} ${p.done}/${p.total}${p.unit === 'keys' ? ' keys' : ''}` : '';
  return `mode ${p.mode}, state ${p.state || 'n/a'},${progress} lag ${p.lagEntries} entries (${p.lagMs} ms)`;
}

export function statusDisplay(out: Output): StatusDisplay {
  return out.isTTY === true ? new BarDisplay(out) : new LineDisplay(out);
}

class LineDisplay implements StatusDisplay {
  #last = '';
  constructor(private readonly out: Output) {}
  show(label: string, status: KindStatus): void {
    const line = `${label}: ${describePosition(positionOf(status))}`;
    if (line === this.#last) return;
    this.#last = line;
    this.out.write(`${line}\n`);
  }
  note(text: string): void {
    this.out.write(`${text}\n`);
  }
  stop(): void {}
}

class BarDisplay implements StatusDisplay {
  readonly #bar: cliProgress.SingleBar;
  #started = false;
  constructor(private readonly out: Output) {
    this.#bar = new cliProgress.SingleBar(
      {
        stream: out as unknown as NodeJS.WritableStream,
        format: '{label} [{bar}] {value}/{total} {unit} | {mode} {state} | lag {lagEntries} entries ({lagMs} ms)',
        hideCursor: true,
        clearOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
  }
  show(label: string, status: KindStatus): void {
    const p = positionOf(status);
    const payload = { label, unit: p.unit, mode: p.mode, state: p.state || 'n/a', lagEntries: p.lagEntries, lagMs: p.lagMs };
    const total = Math.max(p.total, 1);
    if (!this.#started) {
      this.#bar.start(total, p.done, payload);
      this.#started = true;
    } else {
      this.#bar.setTotal(total);
      this.#bar.update(p.done, payload);
    }
  }
  note(text: string): void {
    if (this.#started) {
      this.#bar.stop();
      this.#started = false;
    }
    this.out.write(`${text}\n`);
  }
  stop(): void {
    if (this.#started) this.#bar.stop();
    this.#started = false;
  }
}
