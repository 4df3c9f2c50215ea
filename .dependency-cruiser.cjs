/**
 * Import rules of ARCHITECTURE.md: dependencies point inward.
 * core <- storage <- seal <- vault, replication (neither imports the other) <- http/transport <- node;
 * cli -> api only.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'core-is-pure',
      comment: 'src/core imports nothing of ours outside core, and no I/O modules.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { pathNot: '^src/core/', dependencyTypesNot: ['npm', 'npm-dev', 'type-only'], path: '^src/' },
    },
    {
      name: 'core-no-io',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^(fs|net|http|https|dgram|child_process|node:fs|node:net|node:http|node:https|node:child_process|node:dgram|classic-level|express|@grpc)' },
    },
    {
      name: 'storage-only-core',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: '^src/', pathNot: '^src/(core|storage)/' },
    },
    {
      name: 'only-storage-touches-leveldb',
      severity: 'error',
      from: { pathNot: '^src/storage/' },
      to: { path: 'classic-level' },
    },
    {
      name: 'only-storage-touches-postgres',
      comment: 'node-postgres is a storage engine detail (src/storage/postgres.ts), as classic-level is.',
      severity: 'error',
      from: { pathNot: '^src/storage/' },
      to: { path: 'node_modules/(pg|pg-[a-z-]+)/' },
    },
    {
      name: 'http-and-transport-never-storage',
      severity: 'error',
      from: { path: '^src/(http|transport)/' },
      to: { path: '^src/storage/' },
    },
    {
      name: 'only-http-imports-express',
      severity: 'error',
      from: { pathNot: '^src/http/' },
      to: { path: 'node_modules/express/' },
    },
    {
      name: 'cli-only-api',
      comment: 'The CLI talks to nodes only through the typed API client (and starts a node for `server`).',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/', pathNot: '^src/(cli|api|core|node|license)/' },
    },
    {
      name: 'api-only-core',
      severity: 'error',
      from: { path: '^src/api/' },
      to: { path: '^src/', pathNot: '^src/(api|core)/' },
    },
    {
      name: 'vault-never-replication',
      comment: 'The vault core knows nothing of replication: the node composes the two (src/node/node.ts).',
      severity: 'error',
      from: { path: '^src/vault/' },
      to: { path: '^src/replication/' },
    },
    {
      name: 'replication-never-vault',
      comment: 'Replication reaches the vault only through the VaultCatalog it declares (replication/catalog.ts); the node adapts the core to it.',
      severity: 'error',
      from: { path: '^src/replication/' },
      to: { path: '^src/vault/' },
    },
    {
      name: 'replication-front-door',
      comment: 'Outside src/replication/, replication is imported only through its index.ts.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/replication/' },
      to: { path: '^src/replication/', pathNot: '^src/replication/index[.]ts$' },
    },
    {
      name: 'ha-front-door',
      comment: 'Outside src/ha/, HA is imported only through its index.ts (its test fakes in src/ha/testing/ excepted).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/ha/' },
      to: { path: '^src/ha/', pathNot: '^src/ha/(index[.]ts$|testing/)' },
    },
    {
      name: 'ha-never-http-or-node',
      comment: 'HA declares what the HTTP layer gets of it (ha/ports.ts) and what it needs of the node; the node composes the two.',
      severity: 'error',
      from: { path: '^src/ha/' },
      to: { path: '^src/(http|node)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
