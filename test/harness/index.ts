/**
 * The process-level harness for end-to-end tests on real nodes (build first:
 * `npx tsc -p tsconfig.build.json`).
 *
 *   import { useHarness, initAndUnseal, vault, eventually } from '../harness/index.js';
 *   const h = useHarness();
 *   const node = await h.startNode();
 *   const { rootToken } = await initAndUnseal(node.apiAddr);
 */
export { eventually, EventuallyTimeout, type EventuallyOptions } from './eventually.js';
export {
  createHarness,
  initAndUnseal,
  mountKv2,
  nodeConfig,
  unseal,
  useHarness,
  type Harness,
  type InitResult,
  type LeaseSettings,
  type LogLevel,
  type NodeConfigExtras,
  type ReplicationBlock,
  type StartedNode,
  type StartOptions,
} from './harness.js';
export { rawRequest, vault, type Body, type RawReply, type RawRequest, type Reply, type RequestOptions, type VaultHttp } from './http.js';
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
  kvDataSet,
  lastAcked,
  PERF,
  replicationBase,
  replStatus,
  secondaryToken,
  setPathsFilter,
  startWriter,
  waitInSync,
  type AckedWrite,
  type Kind,
  type KvDataSet,
  type Writer,
  type WriterOptions,
} from './dr.js';
