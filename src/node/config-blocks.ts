/**
 * The blocks of the server config file (`storage`, `listener`, `replication`) and the checks
 * every part of the file shares: each parser adds what is wrong to `issues` as
 * "key.path: problem" and answers undefined for a block it cannot use, so one ConfigError can
 * list every problem (config.ts).
 *
 *   const issues: ConfigIssue[] = [];
 *   const listener = parseListener(tree['listener'], issues, warn);   // { type: 'tcp', address, tls, timeouts }
 */
import { z } from 'zod';
import { splitHostPort } from '../core/cluster-addr.js';
import { parseDuration } from '../core/duration.js';

export type StorageConfig =
  | { readonly type: 'leveldb'; readonly path: string }
  | { readonly type: 'inmem' }
  | PostgresqlStorageConfig;

/**
 * `storage "postgresql"` with Vault's keys and defaults. `connectionUrl` holds a password: never
 * log it (redactConnectionUrl). With `haEnabled` the nodes sharing the database elect one active
 * node through `haTable` (src/ha); `haLeaseTtlMs` (Tessera's `ha_lease_ttl`) is the lock row's
 * lifetime, from which the renew and retry intervals follow (src/node/ha.ts).
 */
export interface PostgresqlStorageConfig {
  readonly type: 'postgresql';
  readonly connectionUrl: string;
  readonly table: string;
  readonly haEnabled: boolean;
  readonly haTable: string;
  readonly haLeaseTtlMs?: number;
  /** `autopilot_redundancy_zone` (the key of Vault's raft storage): the zone sys/ha-status shows for this node. */
  readonly redundancyZone?: string;
  /**
   * Where `connectionUrl` came from, named in start-up errors: `storage "postgresql"
   * connection_url`, or the environment variable (PG_CONNECTION_URL_ENV) that overrode it.
   */
  readonly connectionUrlSource?: string;
  /** `max_connect_retries`: retries of the first connection at start, when given, however long they take (else up to 60 s of retries). */
  readonly maxConnectRetries?: number;
}

/**
 * Where a PostgreSQL connection URL may come from besides the config, first match wins. Vault's
 * physical/postgresql/postgresql.go (connectionURL) lets a non-empty VAULT_PG_CONNECTION_URL
 * override `connection_url`; TESSERA_PG_CONNECTION_URL is ours and wins over both.
 */
export const PG_CONNECTION_URL_ENV = ['TESSERA_PG_CONNECTION_URL', 'VAULT_PG_CONNECTION_URL'] as const;

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

export interface ConfigIssue {
  /** Dotted key path such as "listener.tcp.address"; '' for the file as a whole. */
  readonly key: string;
  readonly problem: string;
}

/** Reports a key that is ignored ("key.path", what). */
export type Warn = (key: string, what: string) => void;

export const configDefaults = {
  listenerAddress: '127.0.0.1:8200',
  walMaxEntries: 100_000,
  walMaxBytes: 268_435_456,
  /** Vault's defaults for both `max_lease_ttl` and `default_lease_ttl`: 768h. */
  leaseTtl: 768 * 3600,
} as const;

const hostPort = z.string().superRefine((v, ctx) => {
  if (splitHostPort(v) === undefined) ctx.addIssue({ code: 'custom', message: `bad address "${v}": expected "host:port" with a port 0-65535` });
});
export const boolish = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']), z.literal(0), z.literal(1)], {
  error: 'expected true or false',
});
export const toBool = (v: z.infer<typeof boolish>): boolean => v === true || v === 'true' || v === '1' || v === 1;

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
const pgTable = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'expected a plain table name (letters, digits, _; at most 63)');
const postgresqlSchema = z.object({
  connection_url: z.string().default(''),
  table: pgTable.default('vault_kv_store'),
  ha_enabled: boolish.default(false),
  ha_table: pgTable.default('vault_ha_locks'),
  // Ours: the HA lock row's lifetime (Vault's is a fixed 15 s). Default 2s; 1s..60s.
  ha_lease_ttl: listenerDuration.optional(),
  // Vault's raft key: this node's redundancy zone, shown in sys/ha-status (nothing else uses it).
  autopilot_redundancy_zone: z.string().max(128, 'at most 128 characters').optional(),
  // Vault's pool knobs: accepted so a Vault config loads; the pool size is ours for now.
  max_idle_connections: z.union([z.number(), z.string()]).optional(),
  max_parallel: z.union([z.number(), z.string()]).optional(),
  // Honoured: the retries of the first connection while the server is unreachable.
  max_connect_retries: z.union([z.number().int().nonnegative(), z.string().regex(/^\d+$/, 'expected a whole number of retries')]).optional(),
});
const storageSchemas = { leveldb: leveldbSchema, inmem: z.object({}), postgresql: postgresqlSchema } as const;
const storageTypes = Object.keys(storageSchemas).join(', ');

const replicationSchema = z.strictObject({
  wal_max_entries: z.number().int().positive().default(configDefaults.walMaxEntries),
  wal_max_bytes: z.number().int().positive().default(configDefaults.walMaxBytes),
});

/**
 * The one `storage` block: leveldb (a path), inmem, or postgresql (Vault's keys; the connection
 * URL from `env` first, see PG_CONNECTION_URL_ENV); unknown keys are warned about.
 */
export function parseStorage(raw: unknown, issues: ConfigIssue[], warn: Warn, env: NodeJS.ProcessEnv = process.env): StorageConfig | undefined {
  return oneLabelled(raw, 'storage', issues, (label, body, key): StorageConfig | undefined => {
    if (label !== 'leveldb' && label !== 'inmem' && label !== 'postgresql') {
      issues.push({ key, problem: `unknown storage type "${label}" (supported: ${storageTypes})` });
      return undefined;
    }
    warnUnknown(body, [storageSchemas[label]], key, warn);
    if (label === 'inmem') return check(storageSchemas.inmem, body, key, issues) && { type: 'inmem' };
    if (label === 'postgresql') return postgresqlStorage(body, key, issues, env);
    const parsed = check(storageSchemas.leveldb, body, key, issues);
    return parsed && { type: 'leveldb', path: parsed.path };
  });
}

function postgresqlStorage(body: Record<string, unknown>, key: string, issues: ConfigIssue[], env: NodeJS.ProcessEnv): PostgresqlStorageConfig | undefined {
  const parsed = check(storageSchemas.postgresql, body, key, issues);
  if (parsed === undefined) return undefined;
  const envName = PG_CONNECTION_URL_ENV.find((name) => env[name] !== undefined && env[name] !== '');
  const connectionUrl = envName !== undefined ? (env[envName] as string) : parsed.connection_url;
  if (connectionUrl === '') {
    issues.push({ key: `${key}.connection_url`, problem: `missing (or set ${PG_CONNECTION_URL_ENV.join(' or ')})` });
    return undefined;
  }
  const ttl = parsed.ha_lease_ttl;
  if (ttl !== undefined && (ttl < 1000 || ttl > 60_000)) {
    issues.push({ key: `${key}.ha_lease_ttl`, problem: 'must be between 1s and 60s' });
    return undefined;
  }
  const retries = parsed.max_connect_retries;
  return {
    type: 'postgresql',
    connectionUrl,
    table: parsed.table,
    haEnabled: toBool(parsed.ha_enabled),
    haTable: parsed.ha_table,
    ...(ttl !== undefined ? { haLeaseTtlMs: ttl } : {}),
    ...(parsed.autopilot_redundancy_zone !== undefined && parsed.autopilot_redundancy_zone !== '' ? { redundancyZone: parsed.autopilot_redundancy_zone } : {}),
    connectionUrlSource: envName !== undefined ? `environment variable ${envName}` : 'storage "postgresql" connection_url',
    ...(retries !== undefined ? { maxConnectRetries: Number(retries) } : {}),
  };
}

/** The one `listener "tcp"` block: address, TLS files unless tls_disable, and deadlines. */
export function parseListener(raw: unknown, issues: ConfigIssue[], warn: Warn): ListenerConfig | undefined {
  return oneLabelled(raw, 'listener', issues, (label, body, key): ListenerConfig | undefined => {
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
}

/** The optional `replication` block (ours, strict): the WAL bounds, defaults when absent. */
export function parseReplication(raw: unknown, issues: ConfigIssue[]): ReplicationConfig {
  let replication: ReplicationConfig = { walMaxEntries: configDefaults.walMaxEntries, walMaxBytes: configDefaults.walMaxBytes };
  const replicationBodies = raw === undefined ? [] : blockBodies(raw, 'replication', issues);
  if (replicationBodies.length > 1) issues.push({ key: 'replication', problem: 'only one replication block is allowed' });
  const r = replicationBodies.length === 1 ? check(replicationSchema, replicationBodies[0], 'replication', issues) : undefined;
  if (r !== undefined) replication = { walMaxEntries: r.wal_max_entries, walMaxBytes: r.wal_max_bytes };
  return replication;
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
export function check<S extends z.ZodType>(schema: S, value: unknown, prefix: string, issues: ConfigIssue[]): z.output<S> | undefined {
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

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
