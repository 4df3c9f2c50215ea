/**
 * The barrier keys as an operator sees them: `sys/rotate`, `sys/key-status`, `sys/rotate/config`,
 * and the commit of a rotation or rekey (the replicated keyring record with the system records, one
 * batch). A standby or secondary takes newer terms from the record on every reload.
 *
 *   const keys = new KeyService(seal, () => core.store(), Date.now);
 *   await keys.rotate();                       // term 2; every secondary holds it first
 *   await keys.status();                       // { term: 2, install_time, encryptions }
 */
import { z } from 'zod';
import { Internal, InvalidRequest } from '../core/errors.js';
import { decodeRecord, KEYRING_RECORD_KEY, type KeyringCommit, type SealManager } from '../seal/index.js';
import type { Store } from '../storage/store.js';

/** A store that can also commit ciphertext made elsewhere with system records (the barrier). */
export interface KeyStore extends Store {
  commitSealed?(ops: readonly { type: 'put'; key: string; value: Buffer }[], system: readonly { name: string; value: Buffer }[]): Promise<void>;
}

/** Replicated: where `sys/rotate/config` keeps Vault's fields. */
export const ROTATE_CONFIG_KEY = 'core/seal/rotate-config';

export interface RotateConfig {
  readonly max_operations: number;
  readonly interval: number;
  readonly enabled: boolean;
}

/** Vault's defaults: 3,865,470,566 encryptions (2^32 × 0.9), no interval, enabled. */
export const DEFAULT_ROTATE_CONFIG: RotateConfig = { max_operations: 3_865_470_566, interval: 0, enabled: true };
const MIN_MAX_OPERATIONS = 1_000_000;
const MAX_MAX_OPERATIONS = 3_865_470_566;
/** Seconds; 0 turns time-based rotation off. */
const MIN_INTERVAL_S = 24 * 3600;

const ConfigSchema = z.object({ max_operations: z.number(), interval: z.number(), enabled: z.boolean() });

export interface KeyStatus {
  readonly term: number;
  readonly install_time: string;
  readonly encryptions: number;
}

export class KeyService {
  constructor(
    private readonly seal: SealManager,
    private readonly store: () => KeyStore,
    private readonly now: () => number,
  ) {}

  /** When each term was installed (from the replicated record; empty before the first record). */
  async installed(): Promise<Readonly<Record<string, string>>> {
    const plain = await this.store().get(KEYRING_RECORD_KEY);
    if (plain === undefined) return {};
    const record = decodeRecord(plain);
    record.keyring.destroy();
    return record.installed;
  }

  /** Writes one rotation or rekey: the record and the system records in one durable batch. */
  readonly commit = async (change: KeyringCommit): Promise<void> => {
    const store = this.store();
    if (store.commitSealed === undefined) throw new Internal('this store cannot commit the keyring record');
    await store.commitSealed([{ type: 'put', key: change.record.key, value: change.record.value }], change.system);
  };

  /** sys/rotate: a new term for new writes; existing values stay readable under theirs. */
  async rotate(): Promise<number> {
    return this.seal.rotate(this.commit, await this.installed(), new Date(this.now()));
  }

  /** Writes the record for the current keyring (at init), so key-status knows term 1's install time. */
  async publish(): Promise<void> {
    const installed = await this.installed();
    const term = this.seal.cipher().activeTerm;
    await this.seal.republish(this.commit, { ...installed, [String(term)]: installed[String(term)] ?? new Date(this.now()).toISOString() });
  }

  async status(): Promise<KeyStatus> {
    const ring = this.seal.cipher();
    const installed = await this.installed();
    const term = ring.activeTerm;
    return { term, install_time: installed[String(term)] ?? new Date(0).toISOString(), encryptions: ring.encryptions };
  }

  /**
   * Takes newer terms (and a rekey's sealed keyring) from the stored record into the live keyring:
   * an HA standby after its active node rotated, called on every cache reload.
   */
  async refresh(): Promise<void> {
    const plain = await this.store().get(KEYRING_RECORD_KEY);
    if (plain !== undefined) this.seal.adoptRecord(decodeRecord(plain));
  }

  async rotateConfig(): Promise<RotateConfig> {
    const raw = await this.store().get(ROTATE_CONFIG_KEY);
    return raw === undefined ? DEFAULT_ROTATE_CONFIG : ConfigSchema.parse(JSON.parse(raw.toString('utf8')));
  }

  /** Stores the config (Vault's bounds); automatic rotation does not act on it yet. */
  async setRotateConfig(change: Partial<RotateConfig>): Promise<void> {
    const next = { ...(await this.rotateConfig()), ...change };
    if (next.max_operations < MIN_MAX_OPERATIONS || next.max_operations > MAX_MAX_OPERATIONS) {
      throw new InvalidRequest(`max_operations must be in the range [${MIN_MAX_OPERATIONS},${MAX_MAX_OPERATIONS}]`);
    }
    if (next.interval !== 0 && next.interval < MIN_INTERVAL_S) throw new InvalidRequest('interval must be greater or equal to 24h0m0s');
    await this.store().commit([{ type: 'put', key: ROTATE_CONFIG_KEY, value: Buffer.from(JSON.stringify(next)) }]);
  }
}
