/**
 * sys/mounts: list, enable, read, disable, and tune secrets engines in the caller's namespace.
 */
import { hash } from 'node:crypto';
import { z } from 'zod';
import { InvalidRequest, NotFound } from '../../core/errors.js';
import type { MountEntry, Mounts } from '../../vault/mounts.js';
import { DEFAULT_TTL_LIMITS, type TtlLimits } from '../../vault/tokens.js';
import { boolish, duration, empty, parseFields, stringMap } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { op, type Route } from '../route.js';

/** A mount table entry as Vault shows it (sys/mounts, and sys/auth adds what auth methods carry). */
export function mountView(e: MountEntry): Record<string, unknown> & { config: Record<string, unknown> } {
  return {
    type: e.type,
    description: e.description,
    accessor: e.accessor,
    uuid: e.uuid,
    local: e.local,
    seal_wrap: e.seal_wrap,
    external_entropy_access: false,
    options: Object.keys(e.options).length > 0 ? e.options : null,
    config: { default_lease_ttl: e.config.default_lease_ttl, max_lease_ttl: e.config.max_lease_ttl, force_no_cache: false },
    plugin_version: '',
    running_plugin_version: '',
  };
}

const SYSTEM_MOUNT = {
  type: 'system', description: 'system endpoints used for control, policy and debugging', accessor: 'system', uuid: '', local: false,
  seal_wrap: false, external_entropy_access: false, options: null, config: { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false },
  plugin_version: '', running_plugin_version: '',
};

/**
 * The cubbyhole mount every namespace has (vault/mount.go requiredMountTable): local, its
 * accessor and uuid stable per namespace since it has no stored entry. Never disabled or tuned.
 */
export function cubbyholeMount(namespace: string): MountEntry {
  const h = hash('sha256', `cubbyhole:${namespace}`, 'hex');
  return {
    path: 'cubbyhole/', namespace, type: 'cubbyhole', description: 'per-token private secret storage', accessor: `cubbyhole_${h.slice(0, 8)}`,
    uuid: `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`, local: true, seal_wrap: false, options: {},
    config: { default_lease_ttl: 0, max_lease_ttl: 0 },
  };
}

/** Mounts no request may disable (Vault's protectedMounts that exist here). */
const PROTECTED = ['sys/', 'cubbyhole/'];

const EnableBody = z.object({
  type: z.string().min(1, 'type is required'),
  description: z.string().optional(),
  local: boolish.optional(),
  options: stringMap.nullish(),
  config: z.object({ default_lease_ttl: duration.optional(), max_lease_ttl: duration.optional() }).passthrough().nullish(),
});

const TuneBody = z.object({
  description: z.string().optional(),
  default_lease_ttl: duration.optional(),
  max_lease_ttl: duration.optional(),
  options: stringMap.nullish(),
});

/** The bodies `sys/mounts/*path` validates, chosen by path (enable, or `.../tune`). */
export const mountBodies = { enable: EnableBody, tune: TuneBody } as const;

/**
 * A mount's tune view as Vault's handleTuneReadCommon gives it: the TTLs in force (a mount's own,
 * else the system's, the default never above the max), not the 0 an untuned mount stores.
 */
export function tuneView(e: MountEntry, limits: TtlLimits): Record<string, unknown> {
  const max = e.config.max_lease_ttl || limits.maxTtl;
  return {
    description: e.description,
    default_lease_ttl: Math.min(e.config.default_lease_ttl || limits.defaultTtl, max),
    max_lease_ttl: max,
    force_no_cache: false,
    ...(Object.keys(e.options).length > 0 ? { options: e.options } : {}),
  };
}

export function mountRoutes(mounts: Mounts, limits: TtlLimits = DEFAULT_TTL_LIMITS): Route[] {
  const split = (path: string) => (path.endsWith('/tune') ? { path: path.slice(0, -5), tune: true } : { path, tune: false });
  return [
    {
      pattern: 'sys/mounts',
      access: 'token',
      operations: {
        read: op(empty, async ({ namespace }) => {
          const out: Record<string, unknown> = { 'cubbyhole/': mountView(cubbyholeMount(namespace)), 'sys/': SYSTEM_MOUNT };
          for (const e of mounts.list(namespace)) out[e.path] = mountView(e);
          return ok(out);
        }, 'List the currently mounted secrets engines.'),
      },
    },
    {
      pattern: 'sys/mounts/*path',
      access: 'token',
      names: (params) => ({ mount: split(params.path ?? '').path }),
      operations: {
        read: op(empty, async ({ params, namespace }) => {
          const { path, tune } = split(params.path ?? '');
          const e = /^\/*cubbyhole\/*$/.test(path) ? cubbyholeMount(namespace) : mounts.get(namespace, path);
          if (!e && tune) throw new InvalidRequest(`cannot fetch sysview for path "${path.replace(/\/*$/, '/').slice(0, 128)}"`);
          if (!e) throw new NotFound([`no mount at "${path}"`]);
          return ok(tune ? tuneView(e, limits) : mountView(e));
        }, 'Read the configuration of the secrets engine at this path.'),
        update: op(z.unknown(), async ({ params, namespace, req }) => {
          const { path, tune } = split(params.path ?? '');
          if (tune) {
            const { data: t, warnings } = parseFields(TuneBody, req.body, { warnUnknown: true });
            await mounts.tune(namespace, path, {
              ...(t.description !== undefined ? { description: t.description } : {}),
              ...(t.default_lease_ttl !== undefined ? { default_lease_ttl: t.default_lease_ttl } : {}),
              ...(t.max_lease_ttl !== undefined ? { max_lease_ttl: t.max_lease_ttl } : {}),
              ...(t.options ? { options: t.options } : {}),
            });
            return warnings.length > 0 ? ok(null, { warnings: [...warnings] }) : noContent();
          }
          const { data: b, warnings } = parseFields(EnableBody, req.body, { warnUnknown: true });
          await mounts.enable(namespace, path, {
            type: b.type,
            ...(b.description !== undefined ? { description: b.description } : {}),
            ...(b.local !== undefined ? { local: b.local } : {}),
            ...(b.options ? { options: b.options } : {}),
            ...(b.config ? { config: { ...(b.config.default_lease_ttl !== undefined ? { default_lease_ttl: b.config.default_lease_ttl } : {}), ...(b.config.max_lease_ttl !== undefined ? { max_lease_ttl: b.config.max_lease_ttl } : {}) } } : {}),
          });
          return warnings.length > 0 ? ok(null, { warnings: [...warnings] }) : noContent();
        }, 'Enable a new secrets engine at this path.'),
        delete: op(empty, async ({ params, namespace }) => {
          const path = (params.path ?? '').replace(/^\/+/, '').replace(/\/*$/, '/');
          if (PROTECTED.some((p) => path.startsWith(p))) throw new InvalidRequest(`cannot unmount "${path.slice(0, 128)}"`);
          await mounts.disable(namespace, params.path ?? '');
          return noContent();
        }, 'Disable the secrets engine at this path.'),
      },
    },
  ];
}
