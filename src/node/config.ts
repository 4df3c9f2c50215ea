/**
 * The server config file, in Vault's shape (HCL, or JSON when the name ends in .json), validated
 * into a `Config` with every default applied.
 *
 *   const config = await loadConfig('/etc/tessera/tessera.hcl');
 *   for (const w of config.warnings) log.warn(w);
 *   const dev = devConfig({ dataDir, listenAddress: '127.0.0.1:8200', clusterAddress: '127.0.0.1:8201' });
 *
 * A bad file throws one ConfigError listing every problem as "FILE: key.path: what is wrong".
 * Unknown top-level keys (Vault's `ui`, `disable_mlock`, ...) and unknown keys in the storage and
 * listener blocks are ignored with a warning; the `replication` block is ours and strict.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { clusterHostPort, splitHostPort } from '../core/cluster-addr.js';
import { parseDuration } from '../core/duration.js';
import { ErrorCode, TesseraError } from '../core/errors.js';
import { parseIssuerKey } from '../license/index.js';
import type { ReadCacheSettings } from '../storage/read-cache.js';
import { parseHcl } from '../vault/policy.js';
import {
  boolish, check, configDefaults, isObject, parseListener, parseReplication, parseStorage, toBool,
  type ConfigIssue, type ListenerConfig, type ReplicationConfig, type StorageConfig,
} from './config-blocks.js';

export { configDefaults, type ConfigIssue, type ListenerConfig, type ReplicationConfig, type StorageConfig, type TlsConfig } from './config-blocks.js';

export const LogLevel = { trace: 'trace', debug: 'debug', info: 'info', warn: 'warn', error: 'error' } as const;
export type LogLevel = (typeof LogLevel)[keyof typeof LogLevel];

/** Vault's system lease bounds, in seconds: tokens get `defaultTtl` unless they ask, never more than `maxTtl`. */
export interface LeaseConfig {
  readonly maxTtl: number;
  readonly defaultTtl: number;
}

export interface Config {
  /** The file it came from; '(dev)' for devConfig. */
  readonly source: string;
  readonly storage: StorageConfig;
  readonly listener: ListenerConfig;
  /** The URL clients are told to use; defaults to the listener's address. */
  readonly apiAddr: string;
  /** "host:port" of the cluster (replication) port; defaults to the listener's port + 1. */
  readonly clusterAddr: string;
  readonly licensePath: string | undefined;
  /** Base64 Ed25519 public keys of trusted license issuers, each checked to be 32 bytes. */
  readonly licenseIssuerKeys: readonly string[];
  readonly hosted: boolean;
  readonly logLevel: LogLevel;
  readonly replication: ReplicationConfig;
  /** `max_lease_ttl` and `default_lease_ttl` (768h each unless set). */
  readonly leases: LeaseConfig;
  /** `audit_dir`: where this node's file audit devices may write; default `<leveldb path>/audit`, none on PostgreSQL unless set. */
  readonly auditDir: string | undefined;
  /** Vault's `disable_performance_standby`: HA standbys relay reads too (default: they answer them). */
  readonly disablePerformanceStandby: boolean;
  /** Vault's `disable_cache` and `cache_size` (entries; unset or at most 0: the default), for the storage read cache. */
  readonly readCache: ReadCacheSettings;
  /** One line per ignored key, "FILE: key.path: ...". */
  readonly warnings: readonly string[];
}

/** A config that cannot be used. `issues` holds every problem found, not just the first. */
export class ConfigError extends TesseraError {
  readonly file: string;
  readonly issues: readonly ConfigIssue[];
  constructor(file: string, issues: readonly ConfigIssue[], options?: { cause?: unknown }) {
    super(ErrorCode.invalidRequest, issues.map((i) => `${file}: ${i.key === '' ? '' : `${i.key}: `}${i.problem}`), options);
    this.file = file;
    this.issues = issues;
  }
}

/** Reads and validates a config file. @throws ConfigError, also for an unreadable file. */
export async function loadConfig(filePath: string): Promise<Config> {
  let text: string;
  try {
    text = await readFile(filePath, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new ConfigError(filePath, [{ key: '', problem: `cannot read the file (${code})` }], { cause: e });
  }
  return parseConfigText(text, filePath);
}

/** Validates config text; `fileName` picks the syntax (.json or HCL) and labels messages. */
export function parseConfigText(text: string, fileName: string): Config {
  let tree: Record<string, unknown>;
  if (fileName.toLowerCase().endsWith('.json')) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new ConfigError(fileName, [{ key: '', problem: `invalid JSON: ${(e as Error).message}` }]);
    }
    if (!isObject(value)) throw new ConfigError(fileName, [{ key: '', problem: 'the JSON must be an object' }]);
    tree = value;
  } else {
    const parsed = parseHcl(text);
    if (!parsed.ok) throw new ConfigError(fileName, [{ key: '', problem: parsed.problem }]);
    tree = parsed.value;
  }
  return validate(tree, fileName);
}

export interface DevConfigOptions {
  readonly dataDir: string;
  readonly listenAddress: string;
  readonly clusterAddress: string;
  readonly licensePath?: string;
  readonly licenseIssuerKeys?: readonly string[];
  readonly logLevel?: LogLevel;
}

/** The config of `server -dev`: LevelDB in `dataDir`, plain HTTP. @throws ConfigError on bad addresses. */
export function devConfig(opts: DevConfigOptions): Config {
  return validate(
    {
      storage: { leveldb: { path: opts.dataDir } },
      listener: { tcp: { address: opts.listenAddress, tls_disable: true } },
      api_addr: `http://${opts.listenAddress}`,
      cluster_addr: opts.clusterAddress,
      license_path: opts.licensePath,
      license_issuer_keys: opts.licenseIssuerKeys ? [...opts.licenseIssuerKeys] : undefined,
      log_level: opts.logLevel,
    },
    '(dev)',
  );
}

export { splitHostPort };

/** A lease bound: Vault's duration forms ("768h", "30m", seconds as a number or string), above zero. */
const leaseDuration = z.union([z.number(), z.string()], { error: 'expected a duration such as "768h" or a number of seconds' }).transform((v, ctx) => {
  try {
    const seconds = parseDuration(v);
    if (seconds > 0) return seconds;
    ctx.addIssue({ code: 'custom', message: 'must be a duration above zero' });
  } catch {
    ctx.addIssue({ code: 'custom', message: `invalid or out-of-range duration ${JSON.stringify(v).slice(0, 40)} (expected such as "768h")` });
  }
  return z.NEVER;
});

const topSchema = z.object({
  api_addr: z
    .string()
    .refine((v) => /^https?:\/\/[^/\s]+/.test(v) && URL.canParse(v), 'expected a URL such as "https://host:8200"')
    .optional(),
  cluster_addr: z.string().optional(),
  license_path: z.string().min(1, 'must not be empty').optional(),
  license_issuer_keys: z
    .array(z.string().refine((k) => parseIssuerKey(k) !== undefined, 'expected a base64 Ed25519 public key (32 bytes)'))
    .default([]),
  hosted: boolish.default(false),
  log_level: z.enum(['trace', 'debug', 'info', 'warn', 'warning', 'error']).default('info'),
  max_lease_ttl: leaseDuration.optional(),
  default_lease_ttl: leaseDuration.optional(),
  audit_dir: z.string().refine((v) => v.startsWith('/'), 'expected an absolute directory path').optional(),
  disable_performance_standby: boolish.default(false),
  // Vault decodes these into an int and a bool; HCL gives either as a string too.
  cache_size: z
    .union([z.number().int(), z.string().regex(/^-?\d+$/, 'expected a whole number of entries')], { error: 'expected a whole number of entries' })
    .transform(Number)
    .refine(Number.isSafeInteger, 'expected a whole number of entries')
    .optional(),
  disable_cache: boolish.default(false),
});
const blockKeys = ['storage', 'listener', 'replication'];

function validate(tree: Record<string, unknown>, file: string): Config {
  const issues: ConfigIssue[] = [];
  const warnings: string[] = [];
  const warn = (key: string, what: string): void => {
    warnings.push(`${file}: ${key}: ${what}`);
  };
  const known = new Set([...Object.keys(topSchema.shape), ...blockKeys]);
  for (const key of Object.keys(tree)) if (!known.has(key)) warn(key, 'unknown key, ignored');

  const storage = parseStorage(tree['storage'], issues, warn);
  const listener = parseListener(tree['listener'], issues, warn);
  const replication = parseReplication(tree['replication'], issues);

  const top = check(topSchema, pick(tree, Object.keys(topSchema.shape)), '', issues);
  let clusterAddr: string | undefined;
  if (top?.cluster_addr !== undefined) {
    clusterAddr = clusterHostPort(top.cluster_addr);
    if (clusterAddr === undefined) {
      issues.push({ key: 'cluster_addr', problem: `bad address "${top.cluster_addr}": expected "host:port" with a port 0-65535` });
    }
  } else if (listener !== undefined) {
    clusterAddr = derivedClusterAddr(listener.address, issues);
  }

  let leases: LeaseConfig | undefined;
  if (top !== undefined) {
    const maxTtl = top.max_lease_ttl ?? configDefaults.leaseTtl;
    // Unset, the default follows a smaller maximum; set above it, it is a mistake to report.
    const defaultTtl = top.default_lease_ttl ?? Math.min(configDefaults.leaseTtl, maxTtl);
    if (defaultTtl > maxTtl) {
      issues.push({ key: 'default_lease_ttl', problem: `${defaultTtl}s exceeds max_lease_ttl (${maxTtl}s)` });
    }
    leases = { maxTtl, defaultTtl };
  }

  if (issues.length > 0 || leases === undefined || storage === undefined || listener === undefined || top === undefined || clusterAddr === undefined) {
    throw new ConfigError(file, issues);
  }
  const scheme = listener.tls.mode === 'enabled' ? 'https' : 'http';
  return {
    source: file,
    storage,
    listener,
    apiAddr: top.api_addr ?? `${scheme}://${listener.address}`,
    clusterAddr,
    licensePath: top.license_path,
    licenseIssuerKeys: Object.freeze([...top.license_issuer_keys]),
    hosted: toBool(top.hosted),
    logLevel: top.log_level === 'warning' ? 'warn' : top.log_level,
    replication,
    leases,
    auditDir: top.audit_dir ?? (storage.type === 'leveldb' ? `${storage.path.replace(/\/+$/, '')}/audit` : undefined),
    disablePerformanceStandby: toBool(top.disable_performance_standby),
    readCache: { disabled: toBool(top.disable_cache), ...(top.cache_size !== undefined ? { entries: top.cache_size } : {}) },
    warnings: Object.freeze(warnings),
  };
}

/** Vault puts the cluster port one above the API port. */
function derivedClusterAddr(listenerAddress: string, issues: ConfigIssue[]): string | undefined {
  const hp = splitHostPort(listenerAddress);
  if (hp === undefined) return undefined;
  if (hp.port === 65535) {
    issues.push({ key: 'cluster_addr', problem: 'missing, and cannot be derived from listener port 65535' });
    return undefined;
  }
  const host = hp.host.includes(':') ? `[${hp.host}]` : hp.host;
  return `${host}:${hp.port === 0 ? 0 : hp.port + 1}`;
}

function pick(tree: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => tree[k] !== undefined).map((k) => [k, tree[k]]));
}

