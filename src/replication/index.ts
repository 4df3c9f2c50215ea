/**
 * Replication's front door: code outside src/replication/ imports replication only from here.
 * The node builds one `ReplicationUnit` (both kinds, forwarding, the rules across kinds, DR
 * operation tokens, status, events) and hands its facets to the HTTP routes; the gRPC transport
 * implements the channel contract declared in transport.ts and identifies peers with pki.ts.
 *
 *   import { ReplicationUnit, type VaultCatalog } from '../replication/index.js';
 *   const unit = await ReplicationUnit.create({ engine, seal, vault, transport, log, now, clusterListen, apiAddr });
 *   await unit.start();
 */
export {
  ReplicationUnit,
  type ClusterListener,
  type ClusterTransport,
  type EventsFacet,
  type ReplicationUnitOptions,
  type RequestGates,
  type StatusOperations,
} from './unit.js';
export type { VaultCatalog } from './catalog.js';
export type { CoreHooks, ReplicationDriver } from './driver.js';
export type { DrOperations, DrTokenOperations, KindOperations, PathsFilterOperations, ReindexOptions } from './facets.js';
export type { ForwardExecutor, ForwardedObservation } from './forwarded-writes.js';
export type { FollowItem, ReplicationEvent, ReplicationEvents } from './events.js';
export { createCa, fingerprintOf, identityOf, issueLeaf, type LeafMaterial } from './pki.js';
export type * from './transport.js';
export { CoalescedReload } from './cache-reload.js';
export { recordedModes, type RecordedModes } from './role-record.js';
export { standbyRegistrations, type DoorRegistration, type StandbyDoorOptions } from './standby-door.js';
export { ChannelError, ChannelReason, NotActiveNode, channelErrorOfService, reasonOfServiceCode } from './channel-error.js';
