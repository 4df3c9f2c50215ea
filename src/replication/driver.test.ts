/**
 * The replication driver of each kind, unit-tested on the in-memory backend: two nodes composed as
 * the node composes them (engine, seal, vault core, one driver) talk over the loopback network
 * (no sockets, no gRPC; mTLS identity still checked), with the clock injected. Every scenario runs
 * for both kinds; what differs is what each kind's policy says, and the table states it.
 */
import { InvalidRequest, ReplicatedWriteRefused } from '../core/errors.js';
import { VERSION } from '../core/version.js';
import { KIND_POLICY, lookupSecondary, type Kind } from '../core/replication/index.js';
import { eventually } from '../../test/harness/eventually.js';
import { driverNode, testClock, type DriverNode, type TestClock } from '../../test/support/driver-node.js';
import { loopbackNetwork, type LoopbackNetwork } from '../../test/support/loopback.js';

interface KindCase {
  readonly kind: Kind;
  /** Whether a secondary receives the primary's local class (its tokens, local mounts). */
  readonly streamsLocal: boolean;
  /** Whether a secondary refuses writes of replicated keys at the engine (it keeps its own WAL). */
  readonly gatesReplicatedWrites: boolean;
}

const CASES: readonly KindCase[] = [
  { kind: 'dr', streamsLocal: true, gatesReplicatedWrites: false },
  { kind: 'performance', streamsLocal: false, gatesReplicatedWrites: true },
];

// Deadlines, not sleeps: generous for a loaded machine, met in milliseconds on an idle one.
const WAIT = { timeoutMs: 10_000, intervalMs: 5 };

describe.each(CASES)('ReplicationDriver ($kind)', (c) => {
  let net: LoopbackNetwork;
  let clock: TestClock;
  let nodes: DriverNode[];

  beforeEach(() => {
    net = loopbackNetwork();
    clock = testClock();
    nodes = [];
  });
  afterEach(async () => {
    for (const n of nodes.splice(0).reverse()) await n.close();
  });

  async function node(name: string, timing: { heartbeatMs?: number } = {}): Promise<DriverNode> {
    const n = await driverNode(c.kind, name, net, clock, timing);
    nodes.push(n);
    return n;
  }

  /** A sealed activation token for `id` (no API call), redeemed by `s`, which then streams. */
  async function activate(p: DriverNode, s: DriverNode, id: string): Promise<void> {
    const pub = await s.driver.generatePublicKey();
    const { token } = await p.driver.secondaryToken({ id, ttlSeconds: 600, secondaryPublicKey: pub });
    expect(token).toBeDefined();
    await s.driver.enableSecondary({ token: token!, primaryApiAddr: '', caFile: '', caPath: '', restoreToken: s.rootToken });
    await eventually(() => expect(s.driver.secondaryLoop?.progress.state).toBe('stream-wals'), WAIT);
    expect(s.driver.state.mode).toBe('secondary');
  }

  /** A primary `p` at loop:p with a replicated value, and a secondary `s` of it streaming. */
  async function pair(timing: { heartbeatMs?: number } = {}): Promise<{ p: DriverNode; s: DriverNode }> {
    const [p, s] = [await node('p', timing), await node('s', timing)];
    await p.put({ 'logical/m1/before': 'written before enable' });
    await p.driver.enablePrimary('');
    expect(p.driver.state.mode).toBe('primary');
    expect(p.driver.clusterAddr()).toBe('loop:p');
    await activate(p, s, 's1');
    return { p, s };
  }

  it('the table agrees with the kind policy', () => {
    const policy = KIND_POLICY[c.kind];
    expect(policy.trees.includes(2)).toBe(c.streamsLocal);
    expect(policy.apply === 'own-wal').toBe(c.gatesReplicatedWrites);
  });

  it('primary enable, secondary-token, secondary enable: the secondary joins the set and applies every write', async () => {
    const { p, s } = await pair();
    const ps = p.driver.state;
    const ss = s.driver.state;
    if (ps.mode !== 'primary' || ss.mode !== 'secondary') throw new Error('modes');
    expect(ss.clusterId).toBe(ps.clusterId);
    expect(ss.secondaryId).toBe('s1');
    expect(ss.primary?.clusterAddr).toBe('loop:p');
    await eventually(() => expect(lookupSecondary((p.driver.state as typeof ps).secondaries, 's1')?.status).toBe('active'), WAIT);
    // What the primary held before the secondary existed, and what it writes afterwards.
    await eventually(async () => expect(await s.get('logical/m1/before')).toBe('written before enable'), WAIT);
    for (let i = 0; i < 5; i++) await p.put({ [`logical/m1/k${i}`]: `v${i}` });
    await p.put({ 'logical/m1/k0': 'overwritten' });
    await p.core.store().commit([{ type: 'del', key: 'logical/m1/k1' }]);
    await eventually(async () => expect(await s.get('logical/m1/k4')).toBe('v4'), WAIT);
    // The overwrite is a later commit than k4's: it may arrive in a later batch.
    await eventually(async () => expect(await s.get('logical/m1/k0')).toBe('overwritten'), WAIT);
    await eventually(async () => expect(await s.get('logical/m1/k1')).toBeUndefined(), WAIT);
    expect(s.driver.secondaryLoop?.progress.lastError).toBe('');
  });

  it('secondariesApplied: the primary learns at once that a connected secondary applied an index, and stops waiting for one that left', async () => {
    // Heartbeats once a minute: only the confirmation asked for can answer within the test.
    const { p, s } = await pair({ heartbeatMs: 60_000 });
    await p.put({ 'logical/m1/acked': 'confirmed by the secondary' });
    const index = p.engine.lastGuard().index;
    const started = Date.now();
    expect(await p.driver.secondariesApplied(index, 30_000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(20_000);
    // Confirmed means held: the value is on the secondary the moment the primary knows it.
    expect(await s.get('logical/m1/acked')).toBe('confirmed by the secondary');
    expect(p.driver.primaryStreamer?.secondaries.get('s1')?.applied.index).toBe(index);
    // A secondary that is gone (its heartbeats stop past the timeout) is not waited for.
    net.partition('loop:p', true);
    await p.put({ 'logical/m1/unconfirmed': 'the secondary is partitioned' });
    clock.advance(5_000);
    const before = Date.now();
    expect(await p.driver.secondariesApplied(p.engine.lastGuard().index, 30_000)).toBe(true);
    expect(Date.now() - before).toBeLessThan(20_000);
    expect(await s.get('logical/m1/unconfirmed')).toBeUndefined();
  });

  it('applies what the kind policy says: local class, local writes, tokens', async () => {
    const { p, s } = await pair();
    await p.put({ 'local/primary-only': 'primary local value' });
    await p.put({ 'logical/m1/marker': 'after the local write' });
    await eventually(async () => expect(await s.get('logical/m1/marker')).toBe('after the local write'), WAIT);
    expect(await s.get('local/primary-only')).toBe(c.streamsLocal ? 'primary local value' : undefined);
    // Tokens are local class: a DR secondary holds the primary's; a performance secondary its own.
    expect((await s.core.tokens.lookup(p.rootToken)) !== undefined).toBe(c.streamsLocal);
    // The token that enabled the secondary went with the wipe, and is not restored once it is active.
    expect(await s.core.tokens.lookup(s.rootToken)).toBeUndefined();
    if (c.gatesReplicatedWrites) {
      // A secondary that keeps its own WAL: its local writes interleave with the stream and survive it;
      // a replicated key is written only by its primary.
      await s.put({ 'local/secondary-own': 'mine' });
      for (let i = 0; i < 3; i++) await p.put({ [`logical/m1/later${i}`]: 'x', 'local/primary-only': `changed ${i}` });
      await eventually(async () => expect(await s.get('logical/m1/later2')).toBe('x'), WAIT);
      expect(await s.get('local/secondary-own')).toBe('mine');
      expect(await s.get('local/primary-only')).toBeUndefined();
      await expect(s.put({ 'logical/m1/by-secondary': 'no' })).rejects.toBeInstanceOf(ReplicatedWriteRefused);
      expect(await s.get('logical/m1/by-secondary')).toBeUndefined();
      expect(s.driver.appliedUpstream()).toBe(p.engine.lastGuard().index);
    } else {
      // The primary's WAL is the secondary's own: same index, same hash.
      await eventually(() => expect(s.engine.lastGuard()).toEqual(p.engine.lastGuard()), WAIT);
      expect(s.driver.appliedUpstream()).toBeUndefined();
    }
  });

  it('revoke-secondary ends the stream, and the revoked id is refused from then on', async () => {
    const { p, s } = await pair();
    await p.put({ 'logical/m1/a': 'before revoke' });
    await eventually(async () => expect(await s.get('logical/m1/a')).toBe('before revoke'), WAIT);
    expect(net.openStreams('loop:p', 's1')).toBe(1);
    await p.driver.revokeSecondary('s1');
    const ps = p.driver.state;
    expect(ps.mode === 'primary' && lookupSecondary(ps.secondaries, 's1')?.status).toBe('revoked');
    expect(net.openStreams('loop:p', 's1')).toBe(0);
    await p.put({ 'logical/m1/a': 'after revoke' });
    // The secondary reconnects and is told why it may not.
    await eventually(() => expect(s.driver.secondaryLoop?.progress.lastError).toMatch(/revoked/), WAIT);
    expect(s.driver.secondaryLoop?.progress.state).not.toBe('stream-wals');
    expect(net.openStreams('loop:p', 's1')).toBe(0);
    expect(await s.get('logical/m1/a')).toBe('before revoke');
    // A new token for the id is refused too: revoked is final for that id.
    await expect(p.driver.secondaryToken({ id: 's1', ttlSeconds: 60, secondaryPublicKey: '' })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('demote then promote: the secondary takes over the set with every write the old primary acknowledged', async () => {
    const { p, s } = await pair();
    const clusterId = p.driver.state.mode === 'primary' ? p.driver.state.clusterId : '';
    for (let i = 0; i < 4; i++) await p.put({ [`logical/m1/w${i}`]: `w${i}` });
    // The final index is the last write's (a performance role record is written after it, locally).
    const last = Number(p.engine.lastGuard().index);
    const report = await p.driver.demote();
    expect(report).toMatchObject({ last_wal: last, confirmed: ['s1'], unconfirmed: [], timed_out: false });
    expect(p.driver.state).toMatchObject({ mode: 'secondary', clusterId, primary: null, demotedAfterFailover: true });
    expect(p.driver.material.primary).toBeUndefined();
    // The old primary no longer serves the set.
    await eventually(() => expect(s.driver.secondaryLoop?.progress.state).not.toBe('stream-wals'), WAIT);
    expect(net.openStreams('loop:p')).toBe(0);
    // Nothing is behind after a drained demote, so a promote without force is accepted.
    await s.driver.promote({ force: false, primaryClusterAddr: '' });
    expect(s.driver.state).toMatchObject({ mode: 'primary', clusterId, secondaries: {} });
    expect(s.driver.clusterAddr()).toBe('loop:s');
    for (let i = 0; i < 4; i++) expect(await s.get(`logical/m1/w${i}`)).toBe(`w${i}`);
    await s.put({ 'logical/m1/on-new-primary': 'yes' });
    expect(await s.get('logical/m1/on-new-primary')).toBe('yes');
    // The demoted node holds no credentials for any primary: it needs a token, not addresses.
    await expect(p.driver.updatePrimary({ addrs: ['loop:s'], primaryApiAddr: '', caFile: '', caPath: '' })).rejects.toThrow(/newly demoted/);
    if (c.gatesReplicatedWrites) await expect(p.put({ 'logical/m1/late': 'no' })).rejects.toBeInstanceOf(ReplicatedWriteRefused);
  });

  it('a partition breaks the stream; once it heals the secondary reconnects and catches up', async () => {
    const { p, s } = await pair();
    net.partition('loop:p', true);
    await eventually(() => expect(s.driver.secondaryLoop?.progress.connection).toBe('transient_failure'), WAIT);
    await p.put({ 'logical/m1/during': 'written while cut off' });
    expect(net.openStreams('loop:p', 's1')).toBe(0);
    expect(await s.get('logical/m1/during')).toBeUndefined();
    net.partition('loop:p', false);
    await eventually(async () => expect(await s.get('logical/m1/during')).toBe('written while cut off'), WAIT);
    await eventually(() => expect(s.driver.secondaryLoop?.progress.state).toBe('stream-wals'), WAIT);
    expect(s.driver.state.mode).toBe('secondary');
  });

  it('update-primary with a blank token forgets the primary and says what it forgot', async () => {
    const { p, s } = await pair();
    const clusterId = s.driver.state.mode === 'secondary' ? s.driver.state.clusterId : '';
    const r = await s.driver.updatePrimary({ token: '', primaryApiAddr: '', caFile: '', caPath: '' });
    expect(r.forgotten).toEqual({ clusterId, primaryClusterAddr: 'loop:p', primaryApiAddr: 'http://p.invalid:8200' });
    expect(s.driver.state).toMatchObject({ mode: 'secondary', clusterId, primary: null, secondaryId: 's1' });
    expect(s.driver.material.secondary).toBeUndefined();
    expect(s.driver.secondaryLoop).toBeUndefined();
    expect(net.openStreams('loop:p', 's1')).toBe(0);
    await p.put({ 'logical/m1/after-forget': 'not for s' });
    // With its credentials gone it cannot probe addresses either; nothing changes.
    await expect(s.driver.updatePrimary({ addrs: ['127.0.0.1:1'], primaryApiAddr: '', caFile: '', caPath: '' })).rejects.toThrow(/no credentials/);
    expect(s.driver.state).toMatchObject({ mode: 'secondary', primary: null });
    expect(await s.get('logical/m1/after-forget')).toBeUndefined();
    // Forgetting twice forgets nothing more.
    expect((await s.driver.updatePrimary({ token: '', primaryApiAddr: '', caFile: '', caPath: '' })).forgotten).toMatchObject({ primaryClusterAddr: '' });
  });

  it('a sealed activation token past its ttl by the injected clock is refused before the wipe', async () => {
    const [p, s] = [await node('p'), await node('s')];
    await p.driver.enablePrimary('');
    await s.put({ 'logical/m1/own': 'kept' });
    const pub = await s.driver.generatePublicKey();
    const { token } = await p.driver.secondaryToken({ id: 'late', ttlSeconds: 60, secondaryPublicKey: pub });
    clock.advance(61_000);
    await expect(s.driver.enableSecondary({ token: token!, primaryApiAddr: '', caFile: '', caPath: '' })).rejects.toThrow(/expired/);
    expect(s.driver.state.mode).toBe('disabled');
    expect(await s.get('logical/m1/own')).toBe('kept');
    expect(await s.core.tokens.lookup(s.rootToken)).toBeDefined();
  });

  it('a secondary older than its primary is refused before the wipe (a 400 saying why), and its data stays', async () => {
    const p = await node('p');
    const s = await driverNode(c.kind, 's', net, clock, { version: '0.9.0' });
    nodes.push(s);
    await p.driver.enablePrimary('');
    await s.put({ 'logical/m1/own': 'kept' });
    const pub = await s.driver.generatePublicKey();
    const { token } = await p.driver.secondaryToken({ id: 'old', ttlSeconds: 60, secondaryPublicKey: pub });
    const refused = s.driver.enableSecondary({ token: token!, primaryApiAddr: '', caFile: '', caPath: '', restoreToken: s.rootToken });
    await expect(refused).rejects.toBeInstanceOf(InvalidRequest);
    await expect(refused).rejects.toThrow(new RegExp(`the primary runs ${VERSION.replace(/\./g, '\\.')} but this node runs 0\\.9\\.0: upgrade this node first.*nothing was wiped`));
    expect(s.driver.state.mode).toBe('disabled');
    expect(await s.get('logical/m1/own')).toBe('kept');
    expect(await s.core.tokens.lookup(s.rootToken)).toBeDefined();
    // The primary still holds the id as issued, not active: nothing bootstrapped.
    expect(lookupSecondary((p.driver.state as { secondaries: Parameters<typeof lookupSecondary>[0] }).secondaries, 'old')?.status).toBe('token-issued');
  });

  it('an activation token of the other kind is refused before anything is spent', async () => {
    const other: Kind = c.kind === 'dr' ? 'performance' : 'dr';
    const p = await driverNode(other, 'other', net, clock);
    nodes.push(p);
    const s = await node('s');
    await p.driver.enablePrimary('');
    await s.put({ 'logical/m1/own': 'kept' });
    const pub = await s.driver.generatePublicKey();
    const { token } = await p.driver.secondaryToken({ id: 'x', ttlSeconds: 60, secondaryPublicKey: pub });
    await expect(s.driver.enableSecondary({ token: token!, primaryApiAddr: '', caFile: '', caPath: '' })).rejects.toThrow(new RegExp(`not ${KIND_POLICY[c.kind].label}`));
    expect(s.driver.state.mode).toBe('disabled');
    expect(await s.get('logical/m1/own')).toBe('kept');
  });
});
