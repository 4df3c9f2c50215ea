/**
 * The lease keeper's thread (lease-keeper.ts says why it exists): renews the active node's lock
 * row from its own connection while the main thread's heartbeat is fresh, and writes the send
 * time of every renewal the database accepted into the shared slots the main thread reads.
 *
 * Slots (Float64, shared; `Slot` in lease-keeper-slots.ts): the heartbeat (the main thread writes
 * Date.now() about every 100 ms), and the send time and epoch of the last accepted renewal
 * (written here). What to keep arrives by message: { holder, epoch } or { epoch: 0 }.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openPostgresLease } from '../storage/postgres-lease.js';
import { Slot, type KeeperData, type KeepMessage } from './lease-keeper-slots.js';

const data = workerData as KeeperData;
const slots = new Float64Array(data.shared);
let keep: { holder: string; epoch: number } | undefined;
let closing = false;

const lease = await openPostgresLease({ connectionUrl: data.connectionUrl, ...(data.table !== undefined ? { table: data.table } : {}), statementTimeoutMs: data.statementTimeoutMs });

parentPort?.on('message', (m: KeepMessage) => {
  if (m.type === 'close') {
    closing = true;
    return;
  }
  keep = m.epoch > 0 && m.holder !== undefined ? { holder: m.holder, epoch: m.epoch } : undefined;
});
parentPort?.postMessage({ type: 'ready' });

async function renewOnce(): Promise<void> {
  const k = keep;
  // A main thread stalled past the limit is left to lose the lease: the fence refuses its commits.
  if (k === undefined || Date.now() - (slots[Slot.heartbeat] ?? 0) >= data.stallLimitMs) return;
  const sentAt = Date.now();
  const ok = await lease.extend(k.holder, k.epoch, data.ttlMs).catch(() => false);
  if (!ok) {
    if (keep === k) keep = undefined;
    return;
  }
  if (keep !== k) return;
  slots[Slot.renewedEpoch] = k.epoch;
  slots[Slot.renewedAt] = sentAt;
}

while (!closing) {
  const started = Date.now();
  await renewOnce();
  await new Promise((resolve) => setTimeout(resolve, Math.max(10, data.renewMs - (Date.now() - started))));
}
await lease.close();
parentPort?.postMessage({ type: 'closed' });
