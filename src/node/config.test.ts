import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDevLicense } from '../license/index.js';
import { ConfigError, devConfig, loadConfig, parseConfigText, splitHostPort } from './config.js';
import type { Config } from './config.js';

const issuerKey = createDevLicense({ now: new Date(0), seed: new Uint8Array(32).fill(1) }).issuerPublicKey;

const fullHcl = `
storage "leveldb" {
  path = "/var/lib/tessera"
}
listener "tcp" {
  address       = "127.0.0.1:8200"
  tls_disable   = false
  tls_cert_file = "/etc/tessera/tls.crt"
  tls_key_file  = "/etc/tessera/tls.key"
  http_read_header_timeout = "5s"
  http_read_timeout        = 30
  http_idle_timeout        = "2m"
}
api_addr            = "https://vault.example.com:8200"
cluster_addr        = "127.0.0.1:8201"
license_path        = "/etc/tessera/license.json"
license_issuer_keys = ["${issuerKey}"]
hosted              = false
log_level           = "debug"   # trace|debug|info|warn|error
max_lease_ttl       = "48h"
default_lease_ttl   = "1h30m"
replication {
  wal_max_entries = 5000
  wal_max_bytes   = 1048576
}
ui            = true
disable_mlock = true
`;

const fullExpected: Omit<Config, 'source' | 'warnings'> = {
  storage: { type: 'leveldb', path: '/var/lib/tessera' },
  listener: {
    type: 'tcp',
    address: '127.0.0.1:8200',
    tls: { mode: 'enabled', certFile: '/etc/tessera/tls.crt', keyFile: '/etc/tessera/tls.key' },
    timeouts: { headersMs: 5_000, bodyMs: 30_000, idleMs: 120_000 },
  },
  apiAddr: 'https://vault.example.com:8200',
  clusterAddr: '127.0.0.1:8201',
  licensePath: '/etc/tessera/license.json',
  licenseIssuerKeys: [issuerKey],
  hosted: false,
  logLevel: 'debug',
  replication: { walMaxEntries: 5000, walMaxBytes: 1048576 },
  leases: { maxTtl: 48 * 3600, defaultTtl: 5400 },
  auditDir: '/var/lib/tessera/audit',
  disablePerformanceStandby: false,
  readCache: { disabled: false },
};

const minimal = 'storage "inmem" {}\nlistener "tcp" {\n  tls_disable = true\n}\n';

function configError(text: string, fileName = 'tessera.hcl'): ConfigError {
  try {
    parseConfigText(text, fileName);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('parseConfigText', () => {
  it('reads a full HCL config and warns about keys it ignores', () => {
    const config = parseConfigText(fullHcl, 'server.hcl');
    expect(config).toEqual({
      ...fullExpected,
      source: 'server.hcl',
      // Warnings come in the file's order.
      warnings: ['server.hcl: ui: unknown key, ignored', 'server.hcl: disable_mlock: unknown key, ignored'],
    });
  });

  it('reads one-line blocks as in Vault configs', () => {
    const text = `storage "leveldb" { path = "/var/lib/tessera" }
listener "tcp" { address = "127.0.0.1:8200"  tls_disable = true  tls_cert_file = ""  tls_key_file = "" }
replication { wal_max_entries = 100000  wal_max_bytes = 268435456 }   # our addition, optional
`;
    const config = parseConfigText(text, 'one-line.hcl');
    expect(config.storage).toEqual({ type: 'leveldb', path: '/var/lib/tessera' });
    expect(config.listener).toEqual({ type: 'tcp', address: '127.0.0.1:8200', tls: { mode: 'disabled' }, timeouts: {} });
    expect(config.replication).toEqual({ walMaxEntries: 100000, walMaxBytes: 268435456 });
  });

  it('reads the same config from Vault-style JSON', () => {
    const json = {
      storage: { leveldb: { path: '/var/lib/tessera' } },
      listener: [{ tcp: { address: '127.0.0.1:8200', tls_cert_file: '/etc/tessera/tls.crt', tls_key_file: '/etc/tessera/tls.key', http_read_header_timeout: '5s', http_read_timeout: '30s', http_idle_timeout: 120 } }],
      api_addr: 'https://vault.example.com:8200',
      cluster_addr: 'https://127.0.0.1:8201',
      license_path: '/etc/tessera/license.json',
      license_issuer_keys: [issuerKey],
      log_level: 'debug',
      max_lease_ttl: 172800,
      default_lease_ttl: '90m',
      replication: { wal_max_entries: 5000, wal_max_bytes: 1048576 },
    };
    const config = parseConfigText(JSON.stringify(json), 'server.JSON');
    expect(config).toEqual({ ...fullExpected, source: 'server.JSON', warnings: [] });
  });

  it('applies defaults and derives the API and cluster addresses from the listener', () => {
    expect(parseConfigText(minimal, 'm.hcl')).toEqual({
      source: 'm.hcl',
      storage: { type: 'inmem' },
      listener: { type: 'tcp', address: '127.0.0.1:8200', tls: { mode: 'disabled' }, timeouts: {} },
      apiAddr: 'http://127.0.0.1:8200',
      clusterAddr: '127.0.0.1:8201',
      licensePath: undefined,
      licenseIssuerKeys: [],
      hosted: false,
      logLevel: 'info',
      replication: { walMaxEntries: 100000, walMaxBytes: 268435456 },
      leases: { maxTtl: 768 * 3600, defaultTtl: 768 * 3600 },
      auditDir: undefined,
      disablePerformanceStandby: false,
      readCache: { disabled: false },
      warnings: [],
    });
  });

  it('reads disable_performance_standby (Vault\'s key: HA standbys relay reads too)', () => {
    expect(parseConfigText(`${minimal}disable_performance_standby = true\n`, 'p.hcl').disablePerformanceStandby).toBe(true);
    expect(parseConfigText(`${minimal}disable_performance_standby = "false"\n`, 'p.hcl').disablePerformanceStandby).toBe(false);
    expect(parseConfigText(minimal, 'p.hcl').warnings).toEqual([]);
  });

  it("reads Vault's cache_size and disable_cache for the storage read cache, and passes them to the node", async () => {
    expect(parseConfigText(minimal, 'c.hcl').readCache).toEqual({ disabled: false });
    expect(parseConfigText(`${minimal}cache_size = "32000"\ndisable_cache = false\n`, 'c.hcl')).toMatchObject({ readCache: { disabled: false, entries: 32000 }, warnings: [] });
    expect(parseConfigText(`${minimal}cache_size = 0\ndisable_cache = "true"\n`, 'c.hcl').readCache).toEqual({ disabled: true, entries: 0 });
    expect(configError(`${minimal}cache_size = "lots"\n`).message).toMatch(/cache_size: expected a whole number of entries/);
    expect(configError(`${minimal}cache_size = 1.5\n`).message).toMatch(/cache_size:/);
    const { toNodeConfig } = await import('./index.js');
    const leveldb = 'storage "leveldb" {\n  path = "/d"\n}\nlistener "tcp" {\n  tls_disable = true\n}\n';
    expect(toNodeConfig(parseConfigText(`${leveldb}cache_size = 64\n`, 'c.hcl')).readCache).toEqual({ disabled: false, entries: 64 });
  });

  it('reads audit_dir (absolute only)', () => {
    expect(parseConfigText(`${minimal}audit_dir = "/var/log/tessera"\n`, 'a.hcl').auditDir).toBe('/var/log/tessera');
    expect(configError(`${minimal}audit_dir = "logs"\n`).message).toMatch(/audit_dir: expected an absolute directory path/);
  });

  it('bounds leases: an unset default follows a smaller max_lease_ttl', () => {
    expect(parseConfigText(`${minimal}max_lease_ttl = "1h"\n`, 'l.hcl').leases).toEqual({ maxTtl: 3600, defaultTtl: 3600 });
    expect(parseConfigText(`${minimal}default_lease_ttl = 60\n`, 'l.hcl').leases).toEqual({ maxTtl: 768 * 3600, defaultTtl: 60 });
  });

  it.each([
    ['max_lease_ttl = "soon"', 'max_lease_ttl', 'invalid or out-of-range duration'],
    ['max_lease_ttl = "99999999999999h"', 'max_lease_ttl', 'invalid or out-of-range duration'],
    ['max_lease_ttl = "0s"', 'max_lease_ttl', 'above zero'],
    ['default_lease_ttl = true', 'default_lease_ttl', 'expected a duration'],
    ['max_lease_ttl = "1h"\ndefault_lease_ttl = "2h"', 'default_lease_ttl', 'exceeds max_lease_ttl'],
  ])('rejects %s', (line, key, problem) => {
    const e = configError(`${minimal}${line}\n`);
    expect(e.issues.find((i) => i.key === key)?.problem).toContain(problem);
  });

  it.each([
    ['[::1]:8200', '[::1]:8201'],
    ['0.0.0.0:0', '0.0.0.0:0'],
    ['node-a.internal:9200', 'node-a.internal:9201'],
  ])('derives the cluster address of listener %s as %s', (address, cluster) => {
    const text = `storage "inmem" {}\nlistener "tcp" {\n  address = "${address}"\n  tls_disable = "true"\n}\n`;
    expect(parseConfigText(text, 'c.hcl').clusterAddr).toBe(cluster);
  });

  it('accepts Vault spellings: string booleans, "warning", an https cluster_addr, unknown listener keys', () => {
    const text = `${minimal}hosted = "1"\nlog_level = "warning"\ncluster_addr = "https://10.0.0.1:8201"\n`;
    const config = parseConfigText(text.replace('tls_disable = true', 'tls_disable = true\n  tls_min_version = "tls12"'), 'v.hcl');
    expect(config.hosted).toBe(true);
    expect(config.logLevel).toBe('warn');
    expect(config.clusterAddr).toBe('10.0.0.1:8201');
    expect(config.warnings).toEqual(['v.hcl: listener.tcp.tls_min_version: unknown key, ignored']);
  });

  const listener = (body: string): string => `storage "inmem" {}\nlistener "tcp" {\n${body}\n}\n`;
  it.each<[string, string, string, string]>([
    ['missing storage', 'listener "tcp" {\n tls_disable = true\n}', 'storage', 'missing'],
    ['missing listener', 'storage "inmem" {}', 'listener', 'missing'],
    ['unknown storage type', 'storage "raft" {\n path = "/x"\n}\nlistener "tcp" {\n tls_disable = true\n}', 'storage.raft', 'unknown storage type "raft"'],
    ['leveldb without a path', 'storage "leveldb" {}\nlistener "tcp" {\n tls_disable = true\n}', 'storage.leveldb.path', 'missing'],
    ['storage as a plain value', 'storage = "leveldb"\nlistener "tcp" {\n tls_disable = true\n}', 'storage', 'labelled block'],
    ['two storage blocks', 'storage "inmem" {}\nstorage "leveldb" {\n path = "/x"\n}\nlistener "tcp" {\n tls_disable = true\n}', 'storage', 'only one storage block'],
    ['unknown listener type', 'storage "inmem" {}\nlistener "unix" {\n address = "/s"\n}', 'listener.unix', 'unknown listener type "unix"'],
    ['address without a port', listener(' address = "localhost"\n tls_disable = true'), 'listener.tcp.address', 'bad address "localhost"'],
    ['address with a port out of range', listener(' address = "127.0.0.1:70000"\n tls_disable = true'), 'listener.tcp.address', 'host:port'],
    ['address of the wrong type', listener(' address = 8200\n tls_disable = true'), 'listener.tcp.address', 'wrong type: expected string, got number 8200'],
    ['TLS enabled without a cert', listener(' tls_key_file = "/k"'), 'listener.tcp.tls_cert_file', 'TLS is enabled'],
    ['TLS enabled without a key', listener(' tls_disable = false\n tls_cert_file = "/c"'), 'listener.tcp.tls_key_file', 'TLS is enabled'],
    ['a non-boolean tls_disable', listener(' tls_disable = "maybe"'), 'listener.tcp.tls_disable', 'expected true or false'],
    ['a non-boolean hosted', `${listener(' tls_disable = true')}hosted = "maybe"`, 'hosted', 'expected true or false'],
    ['an unknown log level', `${listener(' tls_disable = true')}log_level = "verbose"`, 'log_level', 'expected one of'],
    ['an API address that is not a URL', `${listener(' tls_disable = true')}api_addr = "127.0.0.1:8200"`, 'api_addr', 'expected a URL'],
    ['a bad cluster address', `${listener(' tls_disable = true')}cluster_addr = "cluster"`, 'cluster_addr', 'bad address "cluster"'],
    ['a bad issuer key', `${listener(' tls_disable = true')}license_issuer_keys = ["${issuerKey}", "abc"]`, 'license_issuer_keys[1]', 'Ed25519'],
    ['a WAL limit of the wrong type', `${listener(' tls_disable = true')}replication {\n wal_max_entries = "many"\n}`, 'replication.wal_max_entries', 'wrong type'],
    ['a WAL limit of zero', `${listener(' tls_disable = true')}replication {\n wal_max_bytes = 0\n}`, 'replication.wal_max_bytes', 'too small'],
    ['an unknown replication key', `${listener(' tls_disable = true')}replication {\n wal_max = 1\n}`, 'replication.wal_max', 'unknown key'],
    ['an HCL syntax error', `${listener(' tls_disable = true')}\napi_addr = = "x"\n`, '', 'line 6'],
  ])('rejects %s', (_label, text, key, problem) => {
    const e = configError(text);
    expect(e.file).toBe('tessera.hcl');
    const issue = e.issues.find((i) => i.key === key);
    expect(issue?.problem.toLowerCase()).toContain(problem.toLowerCase());
    expect(e.message).toContain(`tessera.hcl: ${key === '' ? '' : `${key}: `}`);
  });

  it('reports every problem at once', () => {
    const e = configError('storage "leveldb" {}\nlistener "tcp" {\n address = "x"\n http_idle_timeout = "soon"\n http_read_timeout = 0\n}\nhosted = 3\n');
    expect(e.issues.map((i) => i.key).sort()).toEqual([
      'hosted',
      'listener.tcp.address',
      'listener.tcp.http_idle_timeout',
      'listener.tcp.http_read_timeout',
      'listener.tcp.tls_cert_file',
      'listener.tcp.tls_key_file',
      'storage.leveldb.path',
    ]);
  });

  it('rejects invalid JSON and a JSON document that is not an object', () => {
    expect(configError('{"storage": ', 'c.json').message).toContain('c.json: invalid JSON');
    expect(configError('[1]', 'c.json').message).toContain('must be an object');
  });
});

describe('loadConfig', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tessera-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('picks HCL or JSON by the file extension', async () => {
    await writeFile(join(dir, 'a.hcl'), minimal);
    await writeFile(join(dir, 'b.json'), JSON.stringify({ storage: { inmem: {} }, listener: { tcp: { tls_disable: true } } }));
    const a = await loadConfig(join(dir, 'a.hcl'));
    const b = await loadConfig(join(dir, 'b.json'));
    expect({ ...a, source: '' }).toEqual({ ...b, source: '' });
    expect(a.source).toBe(join(dir, 'a.hcl'));
  });

  it('reports an unreadable file as a ConfigError naming it', async () => {
    const path = join(dir, 'missing.hcl');
    await expect(loadConfig(path)).rejects.toThrow(ConfigError);
    await expect(loadConfig(path)).rejects.toThrow(`${path}: cannot read the file (ENOENT)`);
  });
});

describe('devConfig', () => {
  it('uses LevelDB in the data dir over plain HTTP', () => {
    const config = devConfig({ dataDir: '/tmp/dev', listenAddress: '127.0.0.1:8300', clusterAddress: '127.0.0.1:8301', licenseIssuerKeys: [issuerKey] });
    expect(config).toMatchObject({
      source: '(dev)',
      storage: { type: 'leveldb', path: '/tmp/dev' },
      listener: { type: 'tcp', address: '127.0.0.1:8300', tls: { mode: 'disabled' } },
      apiAddr: 'http://127.0.0.1:8300',
      clusterAddr: '127.0.0.1:8301',
      licenseIssuerKeys: [issuerKey],
      logLevel: 'info',
      warnings: [],
    });
  });

  it('rejects a bad address', () => {
    expect(() => devConfig({ dataDir: '/d', listenAddress: 'nope', clusterAddress: '127.0.0.1:1' })).toThrow(
      '(dev): listener.tcp.address: bad address "nope"',
    );
  });
});

describe('splitHostPort', () => {
  it.each<[string, { host: string; port: number } | undefined]>([
    ['127.0.0.1:8200', { host: '127.0.0.1', port: 8200 }],
    ['[::1]:0', { host: '::1', port: 0 }],
    ['example.com:65535', { host: 'example.com', port: 65535 }],
    ['example.com:65536', undefined],
    ['::1:8200', undefined],
    [':8200', undefined],
    ['host:', undefined],
    ['http://host:1', undefined],
  ])('%s', (address, expected) => {
    expect(splitHostPort(address)).toEqual(expected);
  });
});

describe('storage "postgresql"', () => {
  const envNames = ['TESSERA_PG_CONNECTION_URL', 'VAULT_PG_CONNECTION_URL'] as const;
  const saved = envNames.map((n) => process.env[n]);
  afterEach(() => {
    envNames.forEach((n, i) => {
      const v = saved[i];
      if (v === undefined) delete process.env[n];
      else process.env[n] = v;
    });
  });
  beforeEach(() => {
    for (const n of envNames) delete process.env[n];
  });
  const pgConfig = (body: string): Config => parseConfigText(`storage "postgresql" {\n${body}\n}\nlistener "tcp" {\n tls_disable = true\n}\n`, 'pg.hcl');

  it("reads Vault's keys, with Vault's table defaults", () => {
    expect(pgConfig('connection_url = "postgres://u:pw@db:5432/vault"').storage).toEqual({
      type: 'postgresql',
      connectionUrl: 'postgres://u:pw@db:5432/vault',
      table: 'vault_kv_store',
      haEnabled: false,
      haTable: 'vault_ha_locks',
      connectionUrlSource: 'storage "postgresql" connection_url',
    });
    const c = pgConfig('connection_url = "postgres://db/v"\ntable = "kv"\nha_enabled = "true"\nha_table = "locks"\nmax_parallel = "128"\nmax_connect_retries = "3"');
    expect(c.storage).toEqual({ type: 'postgresql', connectionUrl: 'postgres://db/v', table: 'kv', haEnabled: true, haTable: 'locks', connectionUrlSource: 'storage "postgresql" connection_url', maxConnectRetries: 3 });
    expect(c.warnings).toEqual([]);
    expect(pgConfig('connection_url = "postgres://db/v"\nmax_connect_retries = 0').storage).toMatchObject({ maxConnectRetries: 0 });
    expect(() => pgConfig('connection_url = "postgres://db/v"\nmax_connect_retries = "many"')).toThrow(/storage\.postgresql\.max_connect_retries/);
    // Vault's raft key for the node's redundancy zone (sys/ha-status); empty is none.
    expect(pgConfig('connection_url = "postgres://db/v"\nautopilot_redundancy_zone = "zone-a"').storage).toMatchObject({ redundancyZone: 'zone-a' });
    expect(pgConfig('connection_url = "postgres://db/v"\nautopilot_redundancy_zone = ""').storage).not.toHaveProperty('redundancyZone');
  });

  it('takes the connection URL from the environment over the config, as Vault does', () => {
    process.env['VAULT_PG_CONNECTION_URL'] = 'postgres://from-vault-env/v';
    expect(pgConfig('connection_url = "postgres://from-config/v"').storage).toMatchObject({ connectionUrl: 'postgres://from-vault-env/v', connectionUrlSource: 'environment variable VAULT_PG_CONNECTION_URL' });
    expect(pgConfig('').storage).toMatchObject({ connectionUrl: 'postgres://from-vault-env/v' });
    process.env['TESSERA_PG_CONNECTION_URL'] = 'postgres://from-tessera-env/v';
    expect(pgConfig('connection_url = "postgres://from-config/v"').storage).toMatchObject({ connectionUrl: 'postgres://from-tessera-env/v', connectionUrlSource: 'environment variable TESSERA_PG_CONNECTION_URL' });
    process.env['TESSERA_PG_CONNECTION_URL'] = '';
    process.env['VAULT_PG_CONNECTION_URL'] = '';
    expect(pgConfig('connection_url = "postgres://from-config/v"').storage).toMatchObject({ connectionUrl: 'postgres://from-config/v' });
  });

  it('reports a missing connection URL and a bad table name', () => {
    const e = (() => {
      try {
        pgConfig('table = "vault kv; drop"');
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message).toContain('storage.postgresql.table');
    expect((e as Error).message).toContain('plain table name');
    expect(() => pgConfig('')).toThrow(/storage\.postgresql\.connection_url: missing \(or set TESSERA_PG_CONNECTION_URL or VAULT_PG_CONNECTION_URL\)/);
  });

  it('is served by `tessera server`: toNodeConfig passes it on', async () => {
    const { toNodeConfig } = await import('./index.js');
    const n = toNodeConfig(pgConfig('connection_url = "postgres://db/v"\nha_enabled = true'));
    expect(n.postgresql).toEqual({ connectionUrl: 'postgres://db/v', table: 'vault_kv_store', haEnabled: true, haTable: 'vault_ha_locks', connectionUrlSource: 'storage "postgresql" connection_url' });
  });
});
