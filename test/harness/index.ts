/**
 * The tests' house, in one import: the builder (harness.ts: process nodes, and in-process ones
 * with `{ inProcess: true }`), topologies (cluster.ts), the one HTTP client (http.ts), replication
 * helpers (dr.ts) and polling with a deadline (eventually.ts). Process nodes need the build first
 * (`npm run build`).
 *
 *   import { useHarness, startCluster, vault, eventually } from '../harness/index.js';
 *   const h = useHarness();
 *   const node = await h.startNode({ init: true });
 *   await node.vault().get('sys/mounts');
 *   const { primary, dr: [east] } = await startCluster(h, { dr: ['east'] });
 *   const ha = await startHaCluster(h, { nodes: 3, mountKv2: true }); // HA on PostgreSQL (ha.ts)
 */
export { eventually, EventuallyTimeout, waitUntil, type EventuallyOptions } from './eventually.js';
export {
  createHarness,
  initAndUnseal,
  mountKv2,
  nodeConfig,
  unseal,
  unsealWith,
  startFixedNode,
  fixedNodeOptions,
  asFixedNode,
  assertPortFree,
  writeLicense,
  useHarness,
  type Harness,
  type InitOption,
  type InitResult,
  type InProcessNode,
  type InProcessOptions,
  type NodeHandle,
  type LeaseSettings,
  type PostgresqlBlock,
  type LogLevel,
  type NodeConfigExtras,
  type ReplicationBlock,
  type FixedNode,
  type FixedNodeOptions,
  type StartedNode,
  type StartOptions,
} from './harness.js';
export { startHaCluster, type ActiveOptions, type HaCluster, type HaNode, type HaPorts, type HaSpec, type InProcessHaNode, type InProcessHaSpec } from './ha.js';
export { joinSecondary, startCluster, type Cluster, type ClusterSoFar, type ClusterSpec, type PathsFilter, type SecondarySpec } from './cluster.js';
export { metricSample, must, rawRequest, vault, type Body, type RawReply, type RawRequest, type Reply, type RequestOptions, type SendOptions, type VaultHttp, type VaultOptions } from './http.js';
export { mainJs, NodeStartError, repoRoot, runCli, spawnNode, type CliOptions, type ExitInfo, type NodeProcess, type Readiness, type SpawnOptions } from './process.js';
export { scanForStrings, type Finding } from './scan.js';
export {
  activateSecondary,
  DR,
  drOperationToken,
  drStatus,
  enablePrimary,
  filteredSet,
  freePort,
  freePorts,
  generateRoot,
  kvDataSet,
  lastAcked,
  PERF,
  replicationBase,
  replStatus,
  secondaryToken,
  setPathsFilter,
  startWriter,
  waitInSync,
  waitStreaming,
  type AckedWrite,
  type Kind,
  type KvDataSet,
  type Writer,
  type WriterOptions,
} from './dr.js';
