/**
 * The HA controller driven by the in-memory lease store (testing/fake-lease-store.ts, held to the
 * PostgreSQL store's contract) and a fake clock (testing/fake-clock.ts): no real time passes, so
 * every deadline is checked to the tick. Nodes of one cluster share one fake database and clock.
 * - A free row is taken; a held one is not; a crashed holder's row is taken once it expired.
 * - Renewals failing past the margin stop the active node before its lease can expire; a renewal
 *   the database refuses, or a fenced commit, stops it at once.
 * - sys/step-down: another node wins during the cooldown; a node alone takes its row back politely.
 * - Sealed nodes do not compete; sealing the active node hands over.
 * - Storage failing while a node becomes active, and under an active node: it releases and backs
 *   off (issue 26 item 1), and the other node is active within one lease period.
 * - Identity: a claim of a live node's id is refused naming the other; free once it stops echoing.
 */
import pino from 'pino';
import type { LeaseCandidate } from '../core/ha/lease-store.js';
import type { StopReason } from '../core/ha/lease.js';
import { HaController, IdentityTaken } from './controller.js';
import { FakeClock } from './testing/fake-clock.js';
import { FakeLeaseDb, type FakeLeaseStore } from './testing/fake-lease-store.js';

const LEASE = { ttlMs: 1000, renewMs: 250, retryMs: 100, marginMs: 250, graceMs: 150, cooldownMs: 2000, backoffMs: 1000, backoffMaxMs: 4000 };
const TICK_MS = 10;
const ECHO_MS = 100;
const log = pino({ level: 'silent' });

const candidate = (name: string, instance = `${name}-1`): LeaseCandidate => ({ holder: `node-${name}`, hostname: 'h', apiAddr: `http://${name}:8200`, clusterAddr: `${name}:8201`, version: 't', instance });

interface TestNode {
  readonly c: HaController;
  readonly store: FakeLeaseStore;
  readonly me: LeaseCandidate;
  /** The epochs the active role started under, and why it stopped, in order. */
  readonly starts: number[];
  readonly stops: StopReason[];
  unseal(): Promise<void>;
}

/** One fake cluster: a database, a clock, and nodes on them; `stop()` ends every node. */
function cluster() {
  const clock = new FakeClock();
  const db = new FakeLeaseDb(() => clock.now());
  const nodes: TestNode[] = [];
  const node = (name: string, o: { failing?: () => string | undefined; me?: LeaseCandidate; startMs?: number } = {}): TestNode => {
    const store = db.connect();
    const me = o.me ?? candidate(name);
    const starts: number[] = [];
    const stops: StopReason[] = [];
    const c = new HaController({
      store,
      me: () => me,
      log,
      clock,
      lease: LEASE,
      tickMs: TICK_MS,
      echoMs: ECHO_MS,
      role: {
        start: async (epoch) => {
          starts.push(epoch);
          if (o.startMs !== undefined) await clock.sleep(o.startMs);
          const why = o.failing?.();
          if (why !== undefined) throw new Error(why);
        },
        stop: async (reason) => {
          stops.push(reason);
        },
      },
    });
    c.start();
    const n: TestNode = { c, store, me, starts, stops, unseal: () => c.sealObserver.opened({ initializing: false }) };
    nodes.push(n);
    return n;
  };
  /** A node unsealed and serving as the active one (the row was free). */
  const active = async (name: string): Promise<TestNode> => {
    const n = node(name);
    await n.unseal();
    await clock.until(() => n.c.isActive(), LEASE.retryMs + 2 * TICK_MS);
    return n;
  };
  const stop = async (): Promise<void> => {
    for (const n of nodes) await n.c.stop();
  };
  return { clock, db, node, active, stop };
}

let stopCluster: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stopCluster?.();
  stopCluster = undefined;
});
function newCluster() {
  const cl = cluster();
  stopCluster = cl.stop;
  return cl;
}

test('a node takes a free row at its first tick, serves under its epoch once its role started, and keeps the row by renewing', async () => {
  const { clock, db, node } = newCluster();
  const a = node('a', { startMs: 200 });
  await a.unseal();
  await clock.advance(TICK_MS);
  // The row is taken; the active role takes 200 ms to start, and the node serves only then.
  expect(db.row?.holder).toBe(a.me.holder);
  expect(a.c.isActive()).toBe(false);
  let served: boolean | undefined;
  void a.c.untilServing(1000).then((v) => (served = v));
  await clock.advance(150);
  expect(served).toBeUndefined();
  expect(await clock.until(() => served !== undefined, 100)).toBeLessThanOrEqual(100);
  expect(served).toBe(true);
  expect(a.c.isActive()).toBe(true);
  const epoch = db.row!.epoch;
  expect(a.starts).toEqual([epoch]);
  expect(a.c.fenceState()).toEqual({ mode: 'active', holder: a.me.holder, epoch });
  expect(a.c.view()).toMatchObject({ mode: 'active', isSelf: true, epoch, leaderRow: { holder: a.me.holder, epoch } });
  // Five lease periods later: still active under the same epoch, renewed about every renewMs.
  await clock.advance(5 * LEASE.ttlMs);
  expect(a.c.isActive()).toBe(true);
  expect(a.stops).toEqual([]);
  expect(db.row).toMatchObject({ holder: a.me.holder, epoch });
  expect(db.isLive()).toBe(true);
  const renewals = a.store.calls.get('renew') ?? 0;
  expect(renewals).toBeGreaterThanOrEqual((5 * LEASE.ttlMs) / LEASE.renewMs - 1);
  expect(renewals).toBeLessThanOrEqual((5 * LEASE.ttlMs) / LEASE.renewMs + 1);
});

test('a standby stays one while another node holds the row, and knows the active node', async () => {
  const { clock, db, node, active } = newCluster();
  const a = await active('a');
  const epoch = db.row!.epoch;
  const b = node('b');
  await b.unseal();
  await clock.advance(5 * LEASE.ttlMs);
  expect(b.c.isActive()).toBe(false);
  expect(b.starts).toEqual([]);
  expect(b.c.fenceState()).toEqual({ mode: 'standby' });
  expect(b.c.view()).toMatchObject({ mode: 'standby', isSelf: false, leaderRow: { holder: a.me.holder, epoch, apiAddr: a.me.apiAddr } });
  // It kept trying, about every retryMs, and never won.
  expect(b.store.calls.get('acquire')).toBeGreaterThanOrEqual((5 * LEASE.ttlMs) / LEASE.retryMs - 1);
  expect(db.row).toMatchObject({ holder: a.me.holder, epoch });
  expect(a.c.isActive()).toBe(true);
});

test('the holder cut off from the database: a standby takes over once the row expired, not before, under a greater epoch', async () => {
  const { clock, db, node, active } = newCluster();
  const a = await active('a');
  const b = node('b');
  await b.unseal();
  await clock.advance(LEASE.renewMs);
  const first = db.row!.epoch;
  a.store.unreachable = 'connection terminated';
  const expiry = db.row!.validUntil;
  await clock.advance(expiry - 1 - clock.now());
  expect(b.c.isActive()).toBe(false);
  expect(db.row?.holder).toBe(a.me.holder);
  const waited = await clock.until(() => b.c.isActive(), LEASE.retryMs + 2 * TICK_MS);
  expect(waited).toBeLessThanOrEqual(LEASE.retryMs + TICK_MS);
  expect(db.row).toMatchObject({ holder: b.me.holder });
  expect(db.row!.epoch).toBeGreaterThan(first);
  expect(b.starts).toEqual([db.row!.epoch]);
  // The cut-off node stopped before its lease could expire at the database.
  expect(a.c.isActive()).toBe(false);
  expect(a.stops).toEqual(['renew-deadline']);
});

test('renewals failing past the margin: the active node stops at its deadline, before its lease can expire, and refuses writes', async () => {
  const { clock, db, active } = newCluster();
  const a = await active('a');
  await clock.advance(LEASE.renewMs);
  const renewedFrom = db.row!.validUntil - LEASE.ttlMs;
  a.store.unreachable = 'connection refused';
  const deadline = renewedFrom + LEASE.ttlMs - LEASE.marginMs;
  await clock.advance(deadline - 1 - clock.now());
  // Failing renewals are retried until the deadline; the node still serves.
  expect(a.c.isActive()).toBe(true);
  expect(a.stops).toEqual([]);
  expect(a.c.storeProblem()).toBe('connection refused');
  await clock.advance(1 + TICK_MS);
  expect(a.c.isActive()).toBe(false);
  expect(a.stops).toEqual(['renew-deadline']);
  expect(a.c.fenceState()).toEqual({ mode: 'standby' });
  expect(clock.now()).toBeLessThan(db.row!.validUntil);
});

test('another node took the row (a renewal answers no) or a commit was fenced: the active node stops at once', async () => {
  const { clock, db, active } = newCluster();
  const a = await active('a');
  const epoch = db.row!.epoch;
  // The row now names another holder and epoch, as after a takeover this node did not see.
  db.row = { ...db.row!, holder: 'node-x', epoch: epoch + 100 };
  await clock.advance(LEASE.renewMs + TICK_MS);
  expect(a.c.isActive()).toBe(false);
  expect(a.stops).toEqual(['lease-lost']);
  // Back as the active node (the row expired), then a commit under its epoch is fenced.
  await clock.until(() => a.c.isActive(), 2 * LEASE.ttlMs);
  const second = db.row!.epoch;
  a.c.fenced(second - 1);
  expect(a.c.isActive()).toBe(true);
  a.c.fenced(second);
  expect(a.c.isActive()).toBe(false);
  expect(a.c.fenceState()).toEqual({ mode: 'standby' });
  await clock.advance(TICK_MS);
  expect(a.stops).toEqual(['lease-lost', 'fenced']);
});

test('sys/step-down: another node wins at its next attempt, and the node that stepped down stays a standby through its cooldown', async () => {
  const { clock, db, node, active } = newCluster();
  const a = await active('a');
  const b = node('b');
  await b.unseal();
  await clock.advance(LEASE.retryMs);
  const first = db.row!.epoch;
  a.c.stepDown();
  expect(a.c.fenceState()).toEqual({ mode: 'standby' });
  await clock.until(() => b.c.isActive(), LEASE.retryMs + 2 * TICK_MS);
  expect(db.row).toMatchObject({ holder: b.me.holder });
  expect(db.row!.epoch).toBeGreaterThan(first);
  expect(a.stops).toEqual(['step-down']);
  expect(a.c.view().mode).toBe('cooldown');
  await clock.advance(LEASE.cooldownMs);
  expect(a.c.view().mode).toBe('standby');
  expect(a.starts).toEqual([first]);
  expect(b.c.isActive()).toBe(true);
});

test('a node alone that stepped down takes its own row back politely: not before twice the grace', async () => {
  const { clock, db, active } = newCluster();
  const a = await active('a');
  const first = db.row!.epoch;
  a.c.stepDown();
  const releasedAt = clock.now();
  await clock.until(() => a.c.isActive(), 2 * LEASE.graceMs + LEASE.retryMs);
  expect(clock.now()).toBeGreaterThanOrEqual(releasedAt + 2 * LEASE.graceMs);
  expect(a.starts).toEqual([first, db.row!.epoch]);
  expect(db.row!.epoch).toBeGreaterThan(first);
});

test('sealed nodes do not compete; sealing the active node releases the row and an unsealed node takes it', async () => {
  const { clock, db, node, active } = newCluster();
  const sealed = node('s');
  await clock.advance(5 * LEASE.retryMs);
  expect(sealed.store.calls.get('acquire')).toBeUndefined();
  expect(db.row).toBeUndefined();
  expect(sealed.c.fenceState()).toEqual({ mode: 'sealed' });
  const a = await active('a');
  const b = node('b');
  await b.unseal();
  await clock.advance(5 * LEASE.retryMs);
  await a.c.sealObserver.sealing();
  expect(a.stops).toEqual(['sealed']);
  expect(a.c.fenceState()).toEqual({ mode: 'sealed' });
  await clock.until(() => b.c.isActive(), LEASE.retryMs + 2 * TICK_MS);
  await clock.advance(5 * LEASE.retryMs);
  expect(sealed.store.calls.get('acquire')).toBeUndefined();
  expect(a.store.calls.get('acquire')).toBe(1);
  expect(db.row).toMatchObject({ holder: b.me.holder });
});

test('storage failing while a node becomes active, then under an active node: it releases and backs off, the other is active within a lease', async () => {
  const { clock, db, node } = newCluster();
  let aFails: string | undefined = 'storage failed: connection terminated unexpectedly';
  const a = node('a', { failing: () => aFails });
  const b = node('b');
  // a alone competes: it wins, its start fails, and it releases the row (nobody holds it).
  await a.unseal();
  await clock.until(() => a.c.view().backoff !== undefined, LEASE.retryMs + 2 * TICK_MS);
  expect(a.c.view().backoff?.reason).toMatch(/storage failed/);
  expect(a.stops).toEqual(['activation-failed']);
  await clock.advance(TICK_MS);
  expect(db.isLive()).toBe(false);
  // Backing off: no new attempt while it lasts.
  const attempts = a.store.calls.get('acquire');
  await clock.advance(LEASE.backoffMs / 2);
  expect(a.store.calls.get('acquire')).toBe(attempts);
  expect(a.starts).toHaveLength(1);
  // b competes now: active well within one lease.
  await b.unseal();
  expect(await clock.until(() => b.c.isActive(), LEASE.ttlMs)).toBeLessThan(LEASE.ttlMs);
  expect(a.c.isActive()).toBe(false);

  // Storage fails under the active node b: it releases and backs off; a (healthy now) takes over.
  aFails = undefined;
  await clock.until(() => a.c.view().backoff === undefined, LEASE.backoffMaxMs);
  b.c.storageFailed('connection terminated unexpectedly');
  expect(b.c.view().backoff?.reason).toBe('storage failed: connection terminated unexpectedly');
  expect(await clock.until(() => a.c.isActive(), LEASE.ttlMs)).toBeLessThan(LEASE.ttlMs);
  expect(b.c.isActive()).toBe(false);
  expect(b.stops).toEqual(['activation-failed']);
});

test('a claim waits for a lock store that does not answer (a connection timing out under load) instead of failing the start, and gives up after a minute', async () => {
  const { clock, node } = newCluster();
  const a = node('a');
  a.store.unreachable = 'Connection terminated due to connection timeout';
  let claimed = false;
  const claim = a.c.claim().then(() => (claimed = true));
  await clock.advance(10 * ECHO_MS);
  expect(claimed).toBe(false);
  a.store.unreachable = undefined;
  await clock.until(() => claimed, 2 * ECHO_MS);
  await claim;

  const b = node('b');
  b.store.unreachable = 'Connection terminated due to connection timeout';
  const refused = b.c.claim().catch((e: unknown) => e);
  await clock.advance(61_000);
  expect(((await refused) as Error).message).toBe('Connection terminated due to connection timeout');
});

test('a second process with a live node\'s id: its claim is refused naming the other; free once the other stops echoing', async () => {
  const { clock, node } = newCluster();
  const me = candidate('a');
  const first = node('a', { me });
  await first.c.claim();
  const second = node('twin', { me: { ...me, instance: 'other-process' } });
  const claim = second.c.claim().catch((e: unknown) => e);
  // The claim waits out three echo intervals (the other may be gone) and one more, then refuses.
  await clock.advance(5 * ECHO_MS);
  const refused = (await claim) as Error;
  expect(refused).toBeInstanceOf(IdentityTaken);
  expect(refused.message).toContain(`api_addr ${me.apiAddr}, cluster_addr ${me.clusterAddr}, last echo `);
  // The first process is gone (no more echoes): the identity is free after the stale window.
  await first.c.stop();
  let claimed = false;
  const again = second.c.claim().then(() => (claimed = true));
  await clock.until(() => claimed, 4 * ECHO_MS);
  await again;
});
