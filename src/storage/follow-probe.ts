/**
 * What an HA standby reads to learn whether the shared database changed since it last followed
 * it: the WAL meta (last index and hash chain, epoch), the install mark and both Merkle roots, as
 * stored. Every commit writes the meta; every batch that writes data outside the WAL (a Merkle
 * sync's install) writes the install mark.
 *
 *   const now = await probeStorage(backend);
 *   if (seen !== undefined && sameProbe(now, seen)) ... // nothing changed
 */
import type { ReadView } from './backend.js';
import { Keys } from './keyspace.js';

const PROBE_KEYS = [Keys.walMeta, Keys.installMark, Keys.treeRoot(1), Keys.treeRoot(2)] as const;
const ABSENT = Buffer.alloc(0);

/** The probe keys' stored values (absent ones empty), in one round trip where the view allows. */
export async function probeStorage(view: ReadView): Promise<Buffer[]> {
  const values = view.getMany !== undefined ? await view.getMany(PROBE_KEYS) : await Promise.all(PROBE_KEYS.map((k) => view.get(k)));
  return values.map((v) => v ?? ABSENT);
}

/** Whether data was written outside the WAL between two probes (the install mark moved). */
export function installedBetween(a: readonly Buffer[], b: readonly Buffer[]): boolean {
  return !a[1]!.equals(b[1]!);
}

export function sameProbe(a: readonly Buffer[], b: readonly Buffer[]): boolean {
  return a.length === b.length && a.every((v, i) => v.equals(b[i]!));
}
