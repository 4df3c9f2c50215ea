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
import { parseHcl } from '../vault/policy.js';

export const LogLevel = { trace: 'trace', debug: 'debug', info: 'info', warn: 'warn', error: 'error' } as const;
export type LogLevel = (typeof LogLevel)[keyof typeof LogLevel];

export type StorageConfig = { readonly type: 'leveldb'; readonly path: string } | { readonly type: 'inmem' };

export type TlsConfig =
  | { readonly mode: 'disabled' }
  | { readonly mode: 'enabled'; readonly certFile: string; readonly keyFile: string };

export interface ListenerConfig {
  readonly type: 'tcp';
  /** "host:port"; port 0 asks the OS for a free port. */
  readonly address: string;
  readonly tls: TlsConfig;
  /**
   * Vault's listener deadlines, in ms, when set: `http_read_header_timeout` (headers),
   * `http_read_timeout` (body), `http_idle_timeout` (keep-alive idle). Unset ones keep the HTTP
   * layer's defaults (10 s, 60 s, 65 s).
   */
  readonly timeouts: { readonly headersMs?: number; readonly bodyMs?: number; readonly idleMs?: number };
}

export interface ReplicationConfig {
  /** The WAL tail the primary keeps for secondaries, bounded by both limits. */
  readonly walMaxEntries: number;
  readonly walMaxBytes: number;
}

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
  /** One line per ignored key, "FILE: key.path: ...". */
  readonly warnings: readonly string[];
}

export interface ConfigIssue {
  /** Dotted key path such as "listener.tcp.address"; '' for the file as a whole. */
  readonly key: string;
  readonly problem: string;
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

export const configDefaults = {
  listenerAddress: '127.0.0.1:8200',
  walMaxEntries: 100_000,
  walMaxBytes: 268_435_456,
  /** Vault's defaults for both `max_lease_ttl` and `default_lease_ttl`: 768h. */
  leaseTtl: 768 * 3600,
} as const;

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

const hostPort = z.string().superRefine((v, ctx) => {
  if (splitHostPort(v) === undefined) ctx.addIssue({ code: 'custom', message: `bad address "${v}": expected "host:port" with a port 0-65535` });
});
const boolish = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']), z.literal(0), z.literal(1)], {
  error: 'expected true or false',
});
const toBool = (v: z.infer<typeof boolish>): boolean => v === true || v === 'true' || v === '1' || v === 1;

// Address and TLS are checked apart so that a bad address does not hide missing TLS files.
const listenerAddressSchema = z.object({ address: hostPort.default(configDefaults.listenerAddress) });
const listenerTlsSchema = z.object({
  tls_disable: boolish.default(false),
  tls_cert_file: z.string().default(''),
  tls_key_file: z.string().default(''),
});
/** A listener deadline: Vault's duration forms, above zero. */
const listenerDuration = z.union([z.number(), z.string()], { error: 'expected a duration such as "10s"' }).transform((v, ctx) => {
  try {
    const seconds = parseDuration(v);
    if (seconds > 0 && seconds <= 86_400) return Math.round(seconds * 1000);
    ctx.addIssue({ code: 'custom', message: 'must be a duration above zero and at most 24h' });
  } catch {
    ctx.addIssue({ code: 'custom', message: `invalid duration ${JSON.stringify(v).slice(0, 40)} (expected such as "10s")` });
  }
  return z.NEVER;
});
const listenerTimeoutSchema = z.object({
  http_read_header_timeout: listenerDuration.optional(),
  http_read_timeout: listenerDuration.optional(),
  http_idle_timeout: listenerDuration.optional(),
});
const leveldbSchema = z.object({ path: z.string().min(1, 'must not be empty') });
const storageSchemas = { leveldb: leveldbSchema, inmem: z.object({}) } as const;

const replicationSchema = z.strictObject({
  wal_max_entries: z.number().int().positive().default(configDefaults.walMaxEntries),
  wal_max_bytes: z.number().int().positive().default(configDefaults.walMaxBytes),
});

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

  const storage = oneLabelled(tree['storage'], 'storage', issues, (label, body, key): StorageConfig | undefined => {
    if (label !== 'leveldb' && label !== 'inmem') {
      issues.push({ key, problem: `unknown storage type "${label}" (supported: leveldb, inmem)` });
      return undefined;
    }
    warnUnknown(body, [storageSchemas[label]], key, warn);
    if (label === 'inmem') return check(storageSchemas.inmem, body, key, issues) && { type: 'inmem' };
    const parsed = check(storageSchemas.leveldb, body, key, issues);
    return parsed && { type: 'leveldb', path: parsed.path };
  });

  const listener = oneLabelled(tree['listener'], 'listener', issues, (label, body, key): ListenerConfig | undefined => {
    if (label !== 'tcp') {
      issues.push({ key, problem: `unknown listener type "${label}" (supported: tcp)` });
      return undefined;
    }
    warnUnknown(body, [listenerAddressSchema, listenerTlsSchema, listenerTimeoutSchema], key, warn);
    const a = check(listenerAddressSchema, body, key, issues);
    const t = check(listenerTlsSchema, body, key, issues);
    const d = check(listenerTimeoutSchema, body, key, issues);
    if (t === undefined) return undefined;
    const timeouts = {
      ...(d?.http_read_header_timeout !== undefined ? { headersMs: d.http_read_header_timeout } : {}),
      ...(d?.http_read_timeout !== undefined ? { bodyMs: d.http_read_timeout } : {}),
      ...(d?.http_idle_timeout !== undefined ? { idleMs: d.http_idle_timeout } : {}),
    };
    if (toBool(t.tls_disable)) return a && d && { type: 'tcp', address: a.address, tls: { mode: 'disabled' }, timeouts };
    for (const f of ['tls_cert_file', 'tls_key_file'] as const) {
      if (t[f] === '') issues.push({ key: `${key}.${f}`, problem: 'missing: TLS is enabled (tls_disable is not true)' });
    }
    return a && d && { type: 'tcp', address: a.address, tls: { mode: 'enabled', certFile: t.tls_cert_file, keyFile: t.tls_key_file }, timeouts };
  });

  let replication: ReplicationConfig = { walMaxEntries: configDefaults.walMaxEntries, walMaxBytes: configDefaults.walMaxBytes };
  const replicationBodies = tree['replication'] === undefined ? [] : blockBodies(tree['replication'], 'replication', issues);
  if (replicationBodies.length > 1) issues.push({ key: 'replication', problem: 'only one replication block is allowed' });
  const r = replicationBodies.length === 1 ? check(replicationSchema, replicationBodies[0], 'replication', issues) : undefined;
  if (r !== undefined) replication = { walMaxEntries: r.wal_max_entries, walMaxBytes: r.wal_max_bytes };

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

/**
 * Accepts HCL's `{label: [body]}`, Vault JSON's `{label: body}`, and lists of either, and requires
 * exactly one block.
 */
function oneLabelled<T>(
  raw: unknown,
  name: string,
  issues: ConfigIssue[],
  build: (label: string, body: Record<string, unknown>, key: string) => T | undefined,
): T | undefined {
  if (raw === undefined) {
    issues.push({ key: name, problem: `missing (for example ${name} "${name === 'storage' ? 'leveldb' : 'tcp'}" { ... })` });
    return undefined;
  }
  const blocks: { label: string; body: Record<string, unknown> }[] = [];
  for (const map of Array.isArray(raw) ? raw : [raw]) {
    if (!isObject(map)) {
      issues.push({ key: name, problem: `expected a labelled block such as ${name} "TYPE" { ... }` });
      return undefined;
    }
    for (const [label, value] of Object.entries(map)) {
      for (const body of blockBodies(value, `${name}.${label}`, issues)) blocks.push({ label, body });
    }
  }
  if (blocks.length !== 1) {
    if (blocks.length > 1) issues.push({ key: name, problem: `only one ${name} block is allowed` });
    return undefined;
  }
  const [only] = blocks;
  return only === undefined ? undefined : build(only.label, only.body, `${name}.${only.label}`);
}

function blockBodies(raw: unknown, key: string, issues: ConfigIssue[]): Record<string, unknown>[] {
  const bodies = Array.isArray(raw) ? raw : [raw];
  if (bodies.length === 0 || !bodies.every(isObject)) {
    issues.push({ key, problem: 'expected a block { ... }' });
    return [];
  }
  return bodies;
}

/** Parses `value` with `schema`, turning each zod issue into one ConfigIssue under `prefix`. */
function check<S extends z.ZodType>(schema: S, value: unknown, prefix: string, issues: ConfigIssue[]): z.output<S> | undefined {
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  for (const issue of result.error.issues) {
    const key = joinKey(prefix, issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) issues.push({ key: joinKey(key, [k]), problem: 'unknown key' });
    } else {
      issues.push({ key, problem: describeIssue(issue) });
    }
  }
  return undefined;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    return issue.input === undefined ? 'missing' : `wrong type: expected ${issue.expected}, got ${typeName(issue.input)}`;
  }
  if (issue.code === 'invalid_value') {
    return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(issue.input)}`;
  }
  return issue.message;
}

function typeName(v: unknown): string {
  if (Array.isArray(v)) return 'a list or block';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'a block';
  return `${typeof v} ${JSON.stringify(v)}`;
}

function joinKey(prefix: string, path: readonly PropertyKey[]): string {
  let key = prefix;
  for (const p of path) key = typeof p === 'number' ? `${key}[${p}]` : key === '' ? String(p) : `${key}.${String(p)}`;
  return key;
}

function warnUnknown(
  body: Record<string, unknown>,
  schemas: readonly z.ZodObject[],
  key: string,
  warn: (k: string, w: string) => void,
): void {
  for (const k of Object.keys(body)) {
    if (!schemas.some((s) => k in s.shape)) warn(`${key}.${k}`, 'unknown key, ignored');
  }
}

function pick(tree: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => tree[k] !== undefined).map((k) => [k, tree[k]]));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
