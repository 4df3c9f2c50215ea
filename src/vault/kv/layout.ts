/**
 * Every storage key the KV engine writes, inside the mount's scoped store. One place, so the
 * replication filters and any migration can reason about the whole keyspace.
 *
 *   KV v1:  <path>                                 the secret's JSON body, as Vault's passthrough
 *   KV v2:  config                                 engine config JSON (see config-paths.ts)
 *           meta/<path>                            key metadata JSON (see metadata-paths.ts)
 *           versions/<path>/<16 hex digits>        one version's data JSON
 *
 *   store.get(versionKey('app/db', 3));  // 'versions/app/db/0000000000000003'
 *
 * Version numbers are zero-padded hex so string order is numeric order. The mapping is injective
 * because the version is always the last segment and never contains '/'.
 */
import { InvalidRequest } from '../../core/errors.js';

export const CONFIG_KEY = 'config';
export const META_PREFIX = 'meta/';
export const VERSIONS_PREFIX = 'versions/';

export function metaKey(path: string): string {
  return META_PREFIX + path;
}

export function versionKey(path: string, version: number): string {
  return `${VERSIONS_PREFIX}${path}/${version.toString(16).padStart(16, '0')}`;
}

/**
 * A secret path: non-empty, no empty or '..' segments. With `dir`, '' (the root) and one trailing
 * '/' are allowed, as a list prefix. The router already rejects these; this is defence in depth,
 * because a bad path here could reach another secret's keys.
 */
export function checkPath(path: string, kind: 'leaf' | 'dir'): string {
  if (kind === 'dir' && path === '') return path;
  const body = kind === 'dir' && path.endsWith('/') ? path.slice(0, -1) : path;
  const bad = body === '' || body.split('/').some((s) => s === '' || s === '..');
  if (bad) throw new InvalidRequest(`invalid path "${path.slice(0, 200)}"`);
  return path;
}
