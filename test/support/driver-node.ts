/**
 * Test support for the replication driver's unit tests: one node as the driver sees it (the
 * storage engine over the in-memory backend, its seal, the vault core, and one driver of `kind`),
 * composed as the replication unit (src/replication/unit.ts) composes them but without HTTP or gRPC: the channel is the
 * loopback network (test/support/loopback.ts), the clock injected.
 *
 *   const net = loopbackNetwork();
 *   const clock = testClock();
 *   const a = await driverNode('performance', 'a', net, clock);
 *   await a.driver.enablePrimary('');
 */
import pino from 'pino';
import type { Kind } from '../../src/core/replication/index.js';
import { SealManager } from '../../src/seal/index.js';
import { StorageEngine } from '../../src/storage/engine.js';
import { MemoryBackend } from '../../src/storage/memory.js';
import { VaultCore } from '../../src/vault/core.js';
import { vaultCatalog } from '../../src/node/vault-catalog.js';
import { ReplicationDriver, type ReplicationTransport } from '../../src/replication/driver.js';

/** Wall time plus an offset a test moves forward. */
export interface TestClock {
  now(): number;
  advance(ms: number): void;
}

export function testClock(): TestClock {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms) => void (offset += ms) };
}

export interface DriverNode {
  readonly name: string;
  readonly engine: StorageEngine;
  readonly core: VaultCore;
  readonly driver: ReplicationDriver;
  /** The root token made at initialization. */
  readonly rootToken: string;
  /** Commits plaintext values through the node's barrier (one WAL entry). */
  put(entries: Record<string, string>): Promise<void>;
  /** A value read through the node's barrier, as text; undefined when absent. */
  get(key: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/** An initialized, unsealed node whose `kind` driver is loaded, listening (when primary) at `loop:<name>`. */
/** `timing.version`: the version the node runs, when a test needs one other than VERSION. */
export async function driverNode(kind: Kind, name: string, transport: ReplicationTransport, clock: TestClock, timing: { heartbeatMs?: number; version?: string } = {}): Promise<DriverNode> {
  const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 10_000, walMaxBytes: 1 << 30, now: clock.now });
  const seal = new SealManager({ get: (n) => engine.getSystem(n), put: (n, v) => engine.putSystem(n, v) });
  const core = new VaultCore({ storage: engine, seal, license: { has: () => true, why: () => '' }, hosted: false, now: clock.now });
  await core.start();
  const init = await core.initialize({ secret_shares: 1, secret_threshold: 1 });
  await core.unseal(init.keys[0], false);
  const driver = new ReplicationDriver({
    kind,
    engine,
    seal,
    core: vaultCatalog(core),
    transport,
    log: pino({ level: 'silent' }),
    clusterListen: `loop:${name}`,
    apiAddr: () => `http://${name}.invalid:8200`,
    now: clock.now,
    timing: { heartbeatMs: timing.heartbeatMs ?? 25, heartbeatTimeoutMs: 2_000, demoteDrainTimeoutMs: 5_000 },
    ...(timing.version !== undefined ? { version: timing.version } : {}),
  });
  await driver.load();
  return {
    name,
    engine,
    core,
    driver,
    rootToken: init.root_token,
    put: (entries) => core.store().commit(Object.entries(entries).map(([key, v]) => ({ type: 'put' as const, key, value: Buffer.from(v) }))),
    get: async (key) => (await core.store().get(key))?.toString('utf8'),
    async close() {
      await driver.suspend();
      await engine.close();
    },
  };
}
