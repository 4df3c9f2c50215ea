/**
 * The replication state machine of one kind, pure. See ./step.ts for the driver's loop.
 *
 *   import { initialState, step, resume, statusFields, refusalError } from '../core/replication/index.js';
 */
export * from './types.js';
export { step, resume } from './step.js';
export { allowedEvents, describeState, refusalError, statusFields, ROUTES, type StatusFields } from './describe.js';
export { KIND_POLICY, KINDS, crossKindRefusal, otherKind, type KindPolicy } from './policy.js';
export { promoteRefusal } from './secondary.js';
export { MAX_ACTIVATION_TTL_MS } from './primary.js';
