/**
 * Finds the KV mount a `kv` command addresses and its version. With `-mount` the path is relative
 * to that mount; without it the longest mount path that prefixes the path wins (nested mounts).
 * The version comes from `sys/mounts` (options.version "2" means v2, anything else v1); a token
 * that may not read `sys/mounts` gets the first path segment as mount and v2, the default.
 *
 *   const kv = await resolveKv(client, 'app/db', 'secret'); // { mount: 'secret', path: 'app/db', version: 2 }
 *   kv.version === 2 ? `${kv.mount}/data/${kv.path}` : `${kv.mount}/${kv.path}`
 */
import type { TesseraClient, MountEntry } from '../../api/index.js';
import { ApiError } from '../../api/index.js';
import { InvalidRequest } from '../../core/index.js';
import { UsageError } from '../errors.js';

export interface KvTarget {
  readonly mount: string;
  readonly path: string;
  readonly version: 1 | 2;
}

const trimSlashes = (s: string): string => s.replace(/^\/+|\/+$/g, '');

/** `allowRoot` lets the path name the mount itself (listing its top level). */
export async function resolveKv(client: TesseraClient, rawPath: string, mountFlag?: string, allowRoot = false): Promise<KvTarget> {
  const path = trimSlashes(rawPath);
  let mounts: Record<string, MountEntry> | undefined;
  try {
    // A preflight, never wrapped: -wrap-ttl applies to the secret, not to the mount lookup.
    mounts = await client.withWrapTtl(undefined).sys.mounts();
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 403)) throw e;
  }

  let mount: string;
  let rel: string;
  if (mountFlag !== undefined) {
    mount = trimSlashes(mountFlag);
    rel = path;
  } else {
    const known = mounts ? longestMount(Object.keys(mounts), path) : undefined;
    mount = known ?? path.split('/')[0] ?? '';
    rel = trimSlashes(path.slice(mount.length));
  }
  if (mount === '' || (rel === '' && !allowRoot)) {
    throw new UsageError(`"${rawPath}" names no secret: give MOUNT/PATH or -mount=MOUNT PATH`);
  }
  if (!mounts) return { mount, path: rel, version: 2 };
  const entry = mounts[`${mount}/`];
  if (!entry) throw new InvalidRequest(`no mount at "${mount}/"`);
  return { mount, path: rel, version: entry.options?.['version'] === '2' ? 2 : 1 };
}

function longestMount(mountKeys: readonly string[], path: string): string | undefined {
  const candidates = mountKeys.filter((m) => `${path}/`.startsWith(m)).sort((a, b) => b.length - a.length);
  const best = candidates[0];
  return best === undefined ? undefined : trimSlashes(best);
}

/** The API path of a secret's data (v2 puts it under data/). */
export function dataPath(kv: KvTarget): string {
  return kv.version === 2 ? `${kv.mount}/data/${kv.path}` : `${kv.mount}/${kv.path}`;
}

/** The API path of a v2 secret's `prefix` section (metadata/, delete/, ...), without a trailing slash. */
export function v2Path(kv: KvTarget, prefix: string): string {
  return [kv.mount, prefix, kv.path].filter((s) => s !== '').join('/');
}

/** Refuses a v1 mount for commands that exist only on KV v2. */
export function requireV2(kv: KvTarget, command: string): void {
  if (kv.version !== 2) throw new UsageError(`kv ${command} needs a KV v2 mount; "${kv.mount}/" is KV v1`);
}
