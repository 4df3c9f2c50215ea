/**
 * matchRoute's index by first segment answers what a scan of every route in declaration order
 * answers: the same first match, parameter routes (`:x`, `*x`) included at their places.
 */
import { matchRoute } from './dispatch.js';
import { findRoute, type Route } from './route.js';

const route = (pattern: string): Route => ({ pattern, access: 'token', operations: {} }) as unknown as Route;

describe('matchRoute', () => {
  const routes = ['sys/health', 'sys/mounts/*path', ':mount/config', 'sys/mounts', 'auth/token/create', 'auth/:mount/login', '*rest', 'sys/policy/:name'].map(route);
  const paths = ['sys/health', 'sys/mounts', 'sys/mounts/a/b', 'kv/config', 'sys/config', 'auth/token/create', 'auth/userpass/login', 'secret/data/x', '', 'sys', 'sys/policy/p', 'sysx/health'];

  it('finds the route a scan of every route finds, for every path', () => {
    for (const p of paths) expect(matchRoute(routes, p)?.route.pattern).toBe(findRoute(routes, p)?.route.pattern);
    expect(matchRoute(routes, 'kv/config')?.route.pattern).toBe(':mount/config');
    expect(matchRoute(routes, 'sys/config')?.route.pattern).toBe(':mount/config');
    expect(matchRoute(routes, 'secret/data/x')?.route.pattern).toBe('*rest');
  });

  it('keeps declaration order between a parameter route and a named one', () => {
    const ordered = [':mount/config', 'sys/config'].map(route);
    expect(matchRoute(ordered, 'sys/config')?.route.pattern).toBe(':mount/config');
    const reversed = ['sys/config', ':mount/config'].map(route);
    expect(matchRoute(reversed, 'sys/config')?.route.pattern).toBe('sys/config');
    expect(matchRoute([route('sys/health')], 'secret/x')).toBeUndefined();
  });
});
