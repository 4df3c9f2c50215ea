/**
 * Leadership of one node of an HA cluster (one active node holding a lease, the others standbys),
 * as a pure state machine. See ./lease.ts for the events, effects and the safety rule.
 *
 *   import { initialState, leaseOptions, step } from '../core/ha/index.js';
 */
export * from './lease.js';
export * from './lease-store.js';
