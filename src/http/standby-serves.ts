/**
 * Which requests an HA performance standby answers itself, from the route declarations (the
 * `standby` trait, route.ts): a route marked `serve`, else a read or list of a namespace route.
 * Everything else is relayed to the active node. The path is matched as sent: a path with a
 * namespace prefix matches no declared route and goes by its method.
 *
 *   const local = servedByStandby(routes, 'GET', '/v1/secret/data/a?version=2');   // true
 */
import { matchRoute } from './dispatch.js';
import type { Route } from './route.js';

const READS = new Set(['GET', 'LIST', 'HEAD']);

export function servedByStandby(routes: readonly Route[], method: string, url: string): boolean {
  const path = (url.split('?')[0] ?? '').replace(/^\/v1\//, '').replace(/\/+$/, '');
  const route = matchRoute(routes, path)?.route;
  if (route?.standby !== undefined) return route.standby === 'serve';
  return READS.has(method) && route?.scope !== 'node';
}
