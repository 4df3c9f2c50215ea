/**
 * HA's front door: code outside src/ha/ imports HA only from here. The node opens the lease
 * store and its fence before the data backend, then builds one `HaUnit` from the ports it
 * declares (ports.ts) and hands its relay and facts to the HTTP layer.
 *
 *   import { createHaUnit, type HaFence } from '../ha/index.js';
 *   const ha = createHaUnit({ fence, engine, vault, replication, clusterListener, listenDoor, connect, execute, ... });
 *   ha.start();
 */
export { createHaUnit, leaseTimings, nodeIdOf, type HaConnection, type HaUnit, type HaUnitOptions } from './unit.js';
export type { DoorListen, HaClusterListener, HaEngine, HaFence, HaGauges, HaHandlers, HaReplication, HaVault, RelayExecutor, Served } from './ports.js';
export { ZERO_TIME, type HaEchoFacts, type HaFacts, type HaNodeInfo, type RawReply, type RawRequest } from './ports.js';
export { HaController, IdentityTaken, type HaView } from './controller.js';
export { LeaseKeeper } from './lease-keeper.js';
export { StandbyRelay, type RelayClient } from './standby.js';
