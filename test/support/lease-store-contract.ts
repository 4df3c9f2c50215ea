/**
 * The one suite every LeaseStore (the HA port of src/core/ha/lease-store.ts) passes: the lock
 * row's acquire, refusal, takeover after expiry, renew and extend, release and the polite grace;
 * epochs that only grow; the fence of the data backend's commits; members, echoes and identity
 * claims. Run by src/storage/postgres-lease.test.ts (a private PostgreSQL) and
 * src/ha/testing/fake-lease-store.test.ts (the in-memory fake the controller's unit tests use).
 *
 *   runLeaseStoreContract('fake', async () => {
 *     const clock = new FakeClock();
 *     const db = new FakeLeaseDb(() => clock.now());
 *     return { a: db.connect(), b: db.connect(), commit: commitUnder, elapse: (ms) => clock.advance(ms), close: async () => undefined };
 *   });
 *
 * Times: a held row uses HELD_MS (it never expires during a case), an expiring one SHORT_MS, and
 * `elapse` lets time pass on the store's clock (real time for PostgreSQL, whose `now()` is the
 * clock; the fake's clock is moved). No assertion needs a short lease to be still live: a row is
 * taken for HELD_MS, checked, and only then given a short expiry (renew or extend) to run out, so a
 * loaded machine's slow statements cannot fail a case.
 */
import { FENCE_REFUSALS, LeaseLost, type FenceState, type LeaseCandidate, type LeaseMember, type LeaseStore } from '../../src/core/ha/lease-store.js';

/** One fresh, empty lease database with two nodes' clients. */
export interface LeaseStoreUnderTest<G> {
  readonly a: LeaseStore<G>;
  readonly b: LeaseStore<G>;
  /** Makes a commit of the data backend under `guard`: its refusal, or undefined when it landed. */
  commit(guard: G): Promise<string | undefined>;
  /** Lets `ms` pass on the store's clock. */
  elapse(ms: number): Promise<void>;
  close(): Promise<void>;
}

export type MakeLeaseStore<G> = () => Promise<LeaseStoreUnderTest<G>>;

/** Long enough never to expire within a case. */
const HELD_MS = 60_000;
/** A lease that expires within a case; `elapse(PAST_SHORT)` outlives it. */
const SHORT_MS = 150;
const PAST_SHORT = SHORT_MS + 100;
/** The polite attempts' grace: a row must have been free this long (twice for the node's own). */
const GRACE_MS = 500;
/** members(DROPPED_MS) leaves out a node that last echoed DROPPED_MS + 200 ago. */
const DROPPED_MS = 400;

const node = (name: string, instance = `${name}-1`): LeaseCandidate => ({ holder: `node-${name}`, hostname: `host-${name}`, apiAddr: `https://${name}:8200`, clusterAddr: `${name}:8201`, version: '1.2.3', instance });
const A = node('a');
const B = node('b');
const rowOf = (c: LeaseCandidate, epoch: number) => ({ holder: c.holder, epoch, apiAddr: c.apiAddr, clusterAddr: c.clusterAddr });
const shown = (m: LeaseMember) => ({ nodeId: m.nodeId, hostname: m.hostname, apiAddr: m.apiAddr, clusterAddr: m.clusterAddr, version: m.version, instance: m.instance, activationFailure: m.activationFailure });
const memberOf = (c: LeaseCandidate) => ({ nodeId: c.holder, hostname: c.hostname, apiAddr: c.apiAddr, clusterAddr: c.clusterAddr, version: c.version, instance: c.instance, activationFailure: undefined });

async function won(p: Promise<{ won: boolean; epoch?: number }>): Promise<number> {
  const r = await p;
  if (!r.won || r.epoch === undefined) throw new Error(`expected the row to be taken, got ${JSON.stringify(r)}`);
  return r.epoch;
}

export function runLeaseStoreContract<G>(name: string, make: MakeLeaseStore<G>): void {
  describe(`LeaseStore contract: ${name}`, () => {
    let s: LeaseStoreUnderTest<G>;
    beforeEach(async () => {
      s = await make();
    });
    afterEach(async () => {
      await s.close();
    });

    it('takes a free row: the row names the holder and its epoch', async () => {
      expect(await s.b.leader()).toBeUndefined();
      const epoch = await won(s.a.acquire(A, HELD_MS));
      expect(epoch).toBeGreaterThan(0);
      expect(await s.b.leader()).toEqual(rowOf(A, epoch));
    });

    it('refuses another node while the row is held and unexpired, naming the holder', async () => {
      const epoch = await won(s.a.acquire(A, HELD_MS));
      expect(await s.b.acquire(B, HELD_MS)).toEqual({ won: false, leader: rowOf(A, epoch) });
      expect(await s.b.acquire(B, HELD_MS, GRACE_MS)).toEqual({ won: false, leader: rowOf(A, epoch) });
      expect(await s.b.leader()).toEqual(rowOf(A, epoch));
    });

    it('another node takes the row over once it expired, under a greater epoch; the old holder renews, extends and releases nothing', async () => {
      const first = await won(s.a.acquire(A, SHORT_MS));
      await s.elapse(PAST_SHORT);
      expect(await s.a.leader()).toBeUndefined();
      const second = await won(s.b.acquire(B, HELD_MS));
      expect(second).toBeGreaterThan(first);
      expect(await s.a.renew(A.holder, first, HELD_MS)).toBe(false);
      expect(await s.a.extend(A.holder, first, HELD_MS)).toBe(false);
      await s.a.release(A.holder, first);
      expect(await s.a.leader()).toEqual(rowOf(B, second));
    });

    it('the holder taking its own live row again gets a new epoch (the old one renews nothing); a polite attempt never takes its own live row', async () => {
      const first = await won(s.a.acquire(A, HELD_MS));
      expect(await s.a.acquire(A, HELD_MS, GRACE_MS)).toEqual({ won: false, leader: rowOf(A, first) });
      const second = await won(s.a.acquire(A, HELD_MS));
      expect(second).toBeGreaterThan(first);
      expect(await s.a.renew(A.holder, first, HELD_MS)).toBe(false);
      expect(await s.b.leader()).toEqual(rowOf(A, second));
    });

    it('renews only for the holder under the same epoch, and a renewal keeps the row past its first expiry', async () => {
      const epoch = await won(s.a.acquire(A, SHORT_MS));
      expect(await s.b.renew(B.holder, epoch, HELD_MS)).toBe(false);
      expect(await s.a.renew(A.holder, epoch + 1, HELD_MS)).toBe(false);
      expect(await s.a.renew(A.holder, epoch, HELD_MS)).toBe(true);
      await s.elapse(PAST_SHORT);
      expect(await s.b.leader()).toEqual(rowOf(A, epoch));
      expect(await s.b.acquire(B, HELD_MS)).toEqual({ won: false, leader: rowOf(A, epoch) });
    });

    it('extend prolongs only a live row; renew brings back an expired row that nobody took', async () => {
      const epoch = await won(s.a.acquire(A, HELD_MS));
      expect(await s.a.extend(B.holder, epoch, HELD_MS)).toBe(false);
      expect(await s.a.extend(A.holder, epoch, SHORT_MS)).toBe(true);
      await s.elapse(PAST_SHORT);
      expect(await s.a.extend(A.holder, epoch, HELD_MS)).toBe(false);
      expect(await s.b.leader()).toBeUndefined();
      expect(await s.a.renew(A.holder, epoch, HELD_MS)).toBe(true);
      expect(await s.b.leader()).toEqual(rowOf(A, epoch));
    });

    it('release ends the lease at once, only under the holder and its epoch; another node takes the row at once', async () => {
      const epoch = await won(s.a.acquire(A, HELD_MS));
      await s.b.release(B.holder, epoch);
      await s.a.release(A.holder, epoch + 1);
      expect(await s.b.leader()).toEqual(rowOf(A, epoch));
      await s.a.release(A.holder, epoch);
      expect(await s.b.leader()).toBeUndefined();
      expect(await s.a.extend(A.holder, epoch, HELD_MS)).toBe(false);
      expect(await won(s.b.acquire(B, HELD_MS))).toBeGreaterThan(epoch);
    });

    it('a polite attempt takes a missing row, and a released one only once it was free for the grace (twice that for its own)', async () => {
      const first = await won(s.a.acquire(A, HELD_MS, GRACE_MS));
      await s.a.release(A.holder, first);
      expect(await s.b.acquire(B, HELD_MS, GRACE_MS)).toEqual({ won: false, leader: undefined });
      await s.elapse(GRACE_MS + 50);
      const second = await won(s.b.acquire(B, HELD_MS, GRACE_MS));
      await s.b.release(B.holder, second);
      await s.elapse(GRACE_MS + 50);
      expect(await s.b.acquire(B, HELD_MS, GRACE_MS)).toEqual({ won: false, leader: undefined });
      await s.elapse(GRACE_MS);
      expect(await won(s.b.acquire(B, HELD_MS, GRACE_MS))).toBeGreaterThan(second);
    });

    it('epochs strictly grow over takeovers, releases and retakes by either node', async () => {
      const epochs: number[] = [];
      for (const [store, me] of [[s.a, A], [s.b, B], [s.b, B], [s.a, A]] as const) {
        const epoch = await won(store.acquire(me, HELD_MS));
        epochs.push(epoch);
        if (epochs.length % 2 === 1) await store.release(me.holder, epoch);
      }
      for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBeGreaterThan(epochs[i - 1]!);
    });

    it('the fence lets the live holder\'s commits land and refuses a stale epoch\'s, telling which', async () => {
      let state: FenceState = { mode: 'sealed' };
      const fenced: number[] = [];
      const guard = s.a.fence(() => state, (epoch) => fenced.push(epoch));
      const first = await won(s.a.acquire(A, HELD_MS));
      state = { mode: 'active', holder: A.holder, epoch: first };
      expect(await s.commit(guard)).toBeUndefined();
      // Another holder's name or another epoch of the same holder commits nothing.
      state = { mode: 'active', holder: B.holder, epoch: first };
      expect(await s.commit(guard)).toBe(new LeaseLost(first).message);
      state = { mode: 'active', holder: A.holder, epoch: first + 1 };
      expect(await s.commit(guard)).toBe(new LeaseLost(first + 1).message);
      expect(fenced).toEqual([first, first + 1]);
      // Expired and taken over: the old epoch commits nothing.
      expect(await s.a.renew(A.holder, first, SHORT_MS)).toBe(true);
      await s.elapse(PAST_SHORT);
      state = { mode: 'active', holder: A.holder, epoch: first };
      expect(await s.commit(guard)).toBe(new LeaseLost(first).message);
      const second = await won(s.b.acquire(B, HELD_MS));
      expect(await s.commit(guard)).toBe(new LeaseLost(first).message);
      expect(fenced).toEqual([first, first + 1, first, first]);
      // The new holder's fence passes; once it releases, its epoch commits nothing either.
      const bFenced: number[] = [];
      const bGuard = s.b.fence(() => ({ mode: 'active', holder: B.holder, epoch: second }), (epoch) => bFenced.push(epoch));
      expect(await s.commit(bGuard)).toBeUndefined();
      await s.b.release(B.holder, second);
      expect(await s.commit(bGuard)).toBe(new LeaseLost(second).message);
      expect(bFenced).toEqual([second]);
    });

    it('the fence refuses a standby at once, and lets a sealed node commit only while no row is live', async () => {
      let state: FenceState = { mode: 'standby' };
      const fenced: number[] = [];
      const guard = s.a.fence(() => state, (epoch) => fenced.push(epoch));
      expect(await s.commit(guard)).toBe(FENCE_REFUSALS.standby);
      state = { mode: 'sealed' };
      expect(await s.commit(guard)).toBeUndefined();
      const epoch = await won(s.b.acquire(B, HELD_MS));
      expect(await s.commit(guard)).toBe(FENCE_REFUSALS.sealed);
      expect(await s.b.renew(B.holder, epoch, SHORT_MS)).toBe(true);
      await s.elapse(PAST_SHORT);
      expect(await s.commit(guard)).toBeUndefined();
      await won(s.b.acquire(B, HELD_MS));
      expect(await s.commit(guard)).toBe(FENCE_REFUSALS.sealed);
      expect(fenced).toEqual([]);
    });

    it('members: every echo is listed oldest first with its fields and any activation failure; members that stopped echoing drop out', async () => {
      const failure = { reason: 'storage failed: connection terminated', at: 1_700_000_000_000, until: 1_700_000_002_000 };
      expect(await s.a.echo(A, HELD_MS)).toBeUndefined();
      await s.elapse(20);
      expect(await s.b.echo(B, HELD_MS, failure)).toBeUndefined();
      expect((await s.a.members(HELD_MS)).map(shown)).toEqual([memberOf(A), { ...memberOf(B), activationFailure: failure }]);
      await s.elapse(20);
      expect(await s.a.echo({ ...A, apiAddr: 'https://a2:8200' }, HELD_MS)).toBeUndefined();
      const members = await s.b.members(HELD_MS);
      expect(members.map(shown)).toEqual([{ ...memberOf(B), activationFailure: failure }, { ...memberOf(A), apiAddr: 'https://a2:8200' }]);
      expect(members[0]!.lastEcho.getTime()).toBeLessThan(members[1]!.lastEcho.getTime());
      // b echoes again without a failure, which clears it; a stops echoing and drops out.
      await s.elapse(DROPPED_MS + 200);
      expect(await s.b.echo(B, HELD_MS)).toBeUndefined();
      expect((await s.a.members(DROPPED_MS)).map(shown)).toEqual([memberOf(B)]);
      expect((await s.a.members(HELD_MS)).map((m) => m.nodeId)).toEqual([A.holder, B.holder]);
    });

    it('identity: another process\'s echo with a live node\'s id is refused and answers that member, until the member is stale', async () => {
      const twin = node('a', 'a-2');
      expect(await s.a.echo(A, HELD_MS)).toBeUndefined();
      const other = await s.b.echo(twin, HELD_MS);
      expect(other === undefined ? undefined : shown(other)).toEqual(memberOf(A));
      // The refused echo changed nothing; the holder's own process echoes on.
      expect((await s.b.members(HELD_MS)).map(shown)).toEqual([memberOf(A)]);
      expect(await s.a.echo(A, HELD_MS)).toBeUndefined();
      // A stops echoing: once its last echo is older than the twin's stale limit, the twin takes the id.
      await s.elapse(PAST_SHORT);
      expect(await s.b.echo(twin, SHORT_MS)).toBeUndefined();
      expect((await s.a.members(HELD_MS)).map(shown)).toEqual([memberOf(twin)]);
      const back = await s.a.echo(A, HELD_MS);
      expect(back === undefined ? undefined : shown(back)).toEqual(memberOf(twin));
    });
  });
}
