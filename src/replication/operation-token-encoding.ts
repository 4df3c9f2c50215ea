/**
 * DR operation tokens leave the node encoded exactly as generated root tokens do; the encoding
 * lives with the shared generation mechanism (seal/root-generation-encoding.ts). This name stays
 * for the callers that import it from the replication side.
 */
export * from '../seal/root-generation-encoding.js';
