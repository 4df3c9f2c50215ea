/**
 * sys/auth: list, read, enable and disable auth methods in the caller's namespace; and the router
 * for `auth/<mount>/...`, which hands each request to the routes of the method mounted there.
 *
 * Enabling and disabling (and reading one) need `sudo` on `sys/auth/<path>`, as in Vault, where
 * `sys/auth/*` is root-protected. The built-in token method appears in the list as `token/`; its
 * own routes are declared in tokens.ts and match before the router.
 */
import { z } from 'zod';
import { InvalidRequest, NotFound } from '../../core/errors.js';
import { tokenAccessor, type AuthEntry, type AuthMethods } from '../../vault/auth/index.js';
import { DEFAULT_TTL_LIMITS, type TtlLimits } from '../../vault/tokens.js';
import { boolish, duration, empty, parseFields, stringMap } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { findRoute, op, type Route } from '../route.js';
import { approleRoutes } from './auth-approle.js';
import { mountView, tuneView } from './mounts.js';
import { userpassRoutes } from './auth-userpass.js';

/** A mount entry's view, with what Vault adds for auth methods. */
function view(e: AuthEntry): Record<string, unknown> {
  const m = mountView(e);
  return { ...m, config: { ...m.config, token_type: 'default-service' }, deprecation_status: 'supported' };
}

function tokenMount(namespace: string): Record<string, unknown> {
  return {
    type: 'token',
    description: 'token based credentials',
    accessor: tokenAccessor(namespace),
    uuid: '',
    local: false,
    seal_wrap: false,
    external_entropy_access: false,
    options: null,
    config: { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false, token_type: 'default-service' },
    plugin_version: '',
    running_plugin_version: '',
    deprecation_status: 'supported',
  };
}

const EnableBody = z.object({
  type: z.string().min(1, 'type is required'),
  description: z.string().optional(),
  local: boolish.optional(),
  seal_wrap: boolish.optional(),
  plugin_name: z.string().optional(),
  options: stringMap.nullish(),
  config: z.object({ default_lease_ttl: duration.optional(), max_lease_ttl: duration.optional() }).passthrough().nullish(),
});

const TuneBody = z.object({
  description: z.string().optional(),
  default_lease_ttl: duration.optional(),
  max_lease_ttl: duration.optional(),
});

/** `<path>/tune` (Vault's `sys/auth/(?P<path>.+?)/tune$`, which matches before enable): the auth path, or undefined. */
function tunePath(path: string): string | undefined {
  return path.endsWith('/tune') && path.length > 5 ? path.slice(0, -5) : undefined;
}

const isToken = (path: string): boolean => /^\/*token\/*$/.test(path);

export function authMethodRoutes(methods: AuthMethods, limits: TtlLimits = DEFAULT_TTL_LIMITS): Route[] {
  /** The tune view of an auth path (Vault's handleTuneReadCommon for `auth/<path>`). */
  const readTune = async (namespace: string, path: string): Promise<Record<string, unknown>> => {
    const token = isToken(path);
    const e = token ? undefined : await methods.table.get(namespace, path);
    if (!token && !e) throw new InvalidRequest(`cannot fetch sysview for path "auth/${path.replace(/\/*$/, '/').slice(0, 128)}"`);
    const view = e ? tuneView(e, limits) : { description: 'token based credentials', default_lease_ttl: limits.defaultTtl, max_lease_ttl: limits.maxTtl, force_no_cache: false };
    return { ...view, token_type: 'default-service' };
  };
  /** The routes of the method mounted at `entry`, with patterns from the namespace root. */
  const methodRoutes = (entry: AuthEntry): Route[] => {
    const prefix = `auth/${entry.path}`;
    switch (entry.type) {
      case 'userpass':
        return userpassRoutes(prefix, methods.userpass(entry));
      case 'approle':
        return approleRoutes(prefix, methods.approle(entry));
    }
  };
  return [
    {
      pattern: 'sys/auth',
      access: 'token',
      operations: {
        read: op(empty, async ({ namespace }) => {
          const out: Record<string, unknown> = { 'token/': tokenMount(namespace) };
          for (const e of await methods.table.list(namespace)) out[e.path] = view(e);
          return ok(out);
        }, 'List the currently enabled auth methods.'),
      },
    },
    {
      pattern: 'sys/auth/*path',
      access: 'sudo',
      names: (params) => ({ mount: `auth/${tunePath(params.path ?? '') ?? params.path ?? ''}` }),
      operations: {
        read: op(empty, async ({ params, namespace }) => {
          const path = params.path ?? '';
          const tune = tunePath(path);
          if (tune !== undefined) return ok(await readTune(namespace, tune));
          if (isToken(path)) return ok(tokenMount(namespace));
          const e = await methods.table.get(namespace, path);
          if (!e) throw new NotFound([`no auth engine at "${path.slice(0, 128)}"`]);
          return ok(view(e));
        }, 'Read the configuration of the auth method at this path.'),
        update: op(z.unknown(), async ({ params, namespace, req }) => {
          const tune = tunePath(params.path ?? '');
          if (tune !== undefined) {
            const { data: t, warnings } = parseFields(TuneBody, req.body, { warnUnknown: true });
            if (isToken(tune)) throw new InvalidRequest('tuning the token auth method is not supported');
            await methods.table.tune(namespace, tune, {
              ...(t.description !== undefined ? { description: t.description } : {}),
              ...(t.default_lease_ttl !== undefined ? { default_lease_ttl: t.default_lease_ttl } : {}),
              ...(t.max_lease_ttl !== undefined ? { max_lease_ttl: t.max_lease_ttl } : {}),
            });
            return warnings.length > 0 ? ok(null, { warnings: [...warnings] }) : noContent();
          }
          const { data: b, warnings } = parseFields(EnableBody, req.body, { warnUnknown: true });
          await methods.table.enable(namespace, params.path ?? '', {
            type: b.type,
            ...(b.description !== undefined ? { description: b.description } : {}),
            ...(b.local !== undefined ? { local: b.local } : {}),
            ...(b.options ? { options: b.options } : {}),
            ...(b.config ? { config: { ...(b.config.default_lease_ttl !== undefined ? { default_lease_ttl: b.config.default_lease_ttl } : {}), ...(b.config.max_lease_ttl !== undefined ? { max_lease_ttl: b.config.max_lease_ttl } : {}) } } : {}),
          });
          return warnings.length > 0 ? ok(null, { warnings: [...warnings] }) : noContent();
        }, 'Enable a new auth method at this path, or tune the one at `<path>/tune`.'),
        delete: op(empty, async ({ params, namespace }) => {
          await methods.disable(namespace, params.path ?? '');
          return noContent();
        }, 'Disable the auth method at this path.'),
      },
    },
    {
      // Whatever under auth/ no declared route took: the method mounted there, if any.
      pattern: 'auth/*path',
      access: 'token',
      names: (params) => ({ mount: `auth/${params.path ?? ''}` }),
      operations: {},
      delegate: async (namespace, path) => {
        const hit = await methods.table.resolve(namespace, path.slice('auth/'.length));
        return hit === undefined ? undefined : findRoute(methodRoutes(hit.entry), path);
      },
    },
  ];
}
