/**
 * The seal's public API: the node builds a SealManager over its system records and hands
 * `manager.cipher()` to the storage barrier. Token generation from the root key shares (Vault's
 * `sys/generate-root`, and DR operation tokens) is one mechanism: RootGeneration.
 *
 *   import { SealManager, decodeShare } from '../seal/index.js';
 */
export { KEY_BYTES, type Random } from './aead.js';
export { ShareCollector, type AddResult, type ShareCollectorOptions } from './collector.js';
export { checkSealConfig, type SealConfig } from './config.js';
export { CiphertextRejected, RejectReason } from './errors.js';
export { Keyring, type Cipher } from './keyring.js';
export {
  RecordName,
  SealManager,
  type InitRequest,
  type KeyringCommit,
  type KeyringCommitter,
  type InitResult,
  type SealEvent,
  type SealExport,
  type SealManagerOptions,
  type SealStatus,
  type SystemRecords,
} from './manager.js';
export { KEYRING_RECORD_KEY, decodeRecord, type KeyringRecord } from './keyring-record.js';
export { combineShares, decodeShare, shareLength, splitRootKey, validateShareConfig } from './shares.js';
export {
  RootGeneration,
  type GenerationRecords,
  type GenerationStart,
  type GenerationStatus,
  type GenerationUpdate,
  type RootGenerationOptions,
} from './root-generation.js';
