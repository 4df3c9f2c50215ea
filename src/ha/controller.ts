/**
 * Drives one node's HA leadership: the pure machine of src/core/ha/lease.ts over the lock row of
 * the shared database (a LeaseStore), ticked by its Clock (clock.ts), and carries out its effects
 * in order on one chain: take or renew the row, start or stop the active role, release the row.
 *
 *   const ha = new HaController({ store, me, role, log });   // clock: realClock() unless given
 *   lifecycle.subscribe(ha.sealObserver);    // unsealed: compete; sealing: stop and release
 *   ha.start();                              // the tick timer
 *   ha.fenceState()                          // what the fence of every commit checks
 *   await ha.stepDown();                     // sys/step-down
 *
 * Safety does not rest here: every commit is fenced inside its own transaction (the store's
 * `fence`), so a node that is late to notice it lost the lease writes nothing. What this adds is
 * liveness: an active node stops before its lease can expire (the machine's deadline), a fenced
 * commit stops it at once, and standbys take over within ttl + retry of a crash.
 */
import type { Logger } from 'pino';
import { Internal } from '../core/errors.js';
import { deadlineOf, initialState, leadership, leaseOptions, step, type Effect, type Event, type Leader, type LeaseOptions, type Leadership, type State, type StopReason } from '../core/ha/lease.js';
import type { FenceState, LeaseCandidate, LeaseMember, LeaseRow, LeaseStore } from '../core/ha/lease-store.js';
import { realClock, type Clock } from './clock.js';

/** The active role of the node: what becoming active starts and stepping down stops. */
export interface ActiveRole {
  /** Load what the last active node wrote, open writes under `epoch`, start replication. */
  start(epoch: number): Promise<void>;
  /** Refuse writes at once, then stop replication. Must not throw. */
  stop(reason: StopReason): Promise<void>;
}

export interface HaControllerOptions {
  readonly store: LeaseStore;
  /** This node as the lock row names it; read at every attempt (the API address may be known late). */
  readonly me: () => LeaseCandidate;
  readonly role: ActiveRole;
  readonly log: Logger;
  /** The time and timers (clock.ts); default the real ones. */
  readonly clock?: Clock;
  readonly lease?: Partial<LeaseOptions>;
  /** How often the machine is ticked (ms); default a fifth of the retry interval. */
  readonly tickMs?: number;
  /** How often this node echoes into the member table (ms). Default 1000. */
  readonly echoMs?: number;
  /** Members that have not echoed for this long are not members (ms). Default 15 s. */
  readonly memberMaxAgeMs?: number;
  /** Renews the lease from another thread while this one stalls (lease-keeper.ts); none: this thread alone. */
  readonly keeper?: LeaseKeeping;
  /**
   * Runs before this node releases the lock row (stepping down, sealing, stopping): what must end
   * before another node may take over (the standbys' read leases, read-lease-server.ts). Must not throw.
   */
  readonly beforeRelease?: () => Promise<void>;
}

/** What the controller needs of the lease keeper (lease-keeper.ts). */
export interface LeaseKeeping {
  keep(holder: string, epoch: number): void;
  drop(): void;
  renewedFrom(epoch: number): number | undefined;
}

/** How many echo intervals another process with this node id may miss before its identity is free. */
const IDENTITY_STALE_ECHOES = 3;
/** How long a starting node's first echo is retried while the lock store does not answer (as its first connection is). */
const CLAIM_RETRY_MS = 60_000;

/** Another live process of the cluster has this node's identity: this one refuses to start. */
export class IdentityTaken extends Internal {
  constructor(readonly other: LeaseMember) {
    super(
      `another live node of this HA cluster has this node's identity (the same hostname, api_addr and cluster_addr): ` +
        `${describeMember(other)}; refusing to start (give this node its own api_addr and cluster_addr, or stop the other one)`,
    );
  }
}

export function describeMember(m: LeaseMember): string {
  return `hostname ${m.hostname}, api_addr ${m.apiAddr}, cluster_addr ${m.clusterAddr}, last echo ${m.lastEcho.toISOString()}`;
}

/** What sys/leader, sys/ha-status, health and metrics show. */
export interface HaView extends Leadership {
  readonly enabled: true;
  /** The active node as the lock row names it (this node's own row when it is active). */
  readonly leaderRow: LeaseRow | undefined;
  readonly epoch: number;
}

export class HaController {
  private state: State;
  private readonly options: LeaseOptions;
  private readonly clock: Clock;
  private stopTicks: (() => void) | undefined;
  private stopEchoes: (() => void) | undefined;
  /**
   * Effects run in order on two chains: the lock row's requests (acquire, renew, release) and the
   * active role's start and stop, so a long start (loading a large index) never delays a renew.
   */
  private leaseChain: Promise<void> = Promise.resolve();
  private roleChain: Promise<void> = Promise.resolve();
  /** True once the active role has started, until it is told to stop. */
  private serving = false;
  /** The holder and epoch the fence checks; set while the active role runs or starts. */
  private fence: { holder: string; epoch: number } | undefined;
  /** The active node's row as last read (standby, cooldown) or this node's own (active). */
  private leaderRow: LeaseRow | undefined;
  private readonly listeners = new Set<(view: HaView) => void>();
  /** The members as last read (every echo): what the primary advertises to its secondaries. */
  private lastMembers: readonly LeaseMember[] = [];
  private stopped = false;

  constructor(private readonly o: HaControllerOptions) {
    this.clock = o.clock ?? realClock();
    this.options = leaseOptions(o.lease);
    this.state = initialState(this.options);
  }

  get leaseOptions(): LeaseOptions {
    return this.options;
  }

  /** Starts ticking the machine and echoing this node's membership. */
  start(): void {
    const tickMs = this.o.tickMs ?? Math.max(10, Math.floor(this.options.retryMs / 5));
    this.stopTicks = this.clock.every(tickMs, () => this.feed({ type: 'tick', now: this.clock.now() }));
    const echo = (): void => {
      const sentAt = this.clock.now();
      this.o.store
        .echo(this.o.me(), this.identityStaleMs(), this.view().backoff, { echoDurationMs: this.lastEcho.durationMs, localTime: sentAt })
        .then((other) => {
          const now = this.clock.now();
          this.lastEcho = { durationMs: now - sentAt, answeredAt: now };
          this.identity(other);
          return this.o.store.members(this.o.memberMaxAgeMs ?? 15_000);
        })
        .then((m) => {
          this.lastMembers = m;
        })
        .catch((e: unknown) => this.o.log.debug({ err: (e as Error).message }, 'HA echo failed'));
      // A node that is not active learns who is from the row (cooldown and sealed do not compete).
      if (this.state.mode !== 'active') this.refreshLeader();
    };
    echo();
    this.stopEchoes = this.clock.every(this.o.echoMs ?? 1000, echo);
  }

  /** How long this node's last answered echo took and when it was answered (Vault's echo duration and heartbeat). */
  private lastEcho: { durationMs: number; answeredAt: number | undefined } = { durationMs: 0, answeredAt: undefined };

  /** This node's own echoes: the last one's duration and answer time, and how often it echoes (ms). */
  echoes(): { readonly durationMs: number; readonly answeredAt: number | undefined; readonly intervalMs: number } {
    return { ...this.lastEcho, intervalMs: this.o.echoMs ?? 1000 };
  }

  private identityStaleMs(): number {
    return IDENTITY_STALE_ECHOES * (this.o.echoMs ?? 1000);
  }

  /**
   * Before the node competes (at start): takes this node's identity in the member table, waiting
   * while another process's echo may only be the last of a process that is gone (a restart after
   * kill -9). Rejects with IdentityTaken when another process keeps echoing it.
   */
  async claim(): Promise<void> {
    const started = this.clock.now();
    let until = started + this.identityStaleMs() + (this.o.echoMs ?? 1000);
    for (;;) {
      let other: LeaseMember | undefined;
      try {
        other = await this.o.store.echo(this.o.me(), this.identityStaleMs());
      } catch (e) {
        // The lock store busy or briefly unreachable (a connection that timed out under load): the
        // node waits for it, as its first connection does, rather than exit; the identity window
        // starts again from the first answer.
        if (this.clock.now() - started >= CLAIM_RETRY_MS) throw e;
        this.o.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'HA: the lock store did not answer this node\'s first echo; retrying');
        await this.clock.sleep(Math.floor((this.o.echoMs ?? 1000) / 2));
        until = this.clock.now() + this.identityStaleMs() + (this.o.echoMs ?? 1000);
        continue;
      }
      if (other === undefined) return;
      if (this.clock.now() >= until) throw new IdentityTaken(other);
      await this.clock.sleep(Math.floor((this.o.echoMs ?? 1000) / 2));
    }
  }

  /** An echo's answer: another process holds this identity (stop competing), or this one does. */
  private identity(other: LeaseMember | undefined): void {
    const was = this.state.excluded;
    if (other === undefined) {
      if (was === undefined) return;
      this.o.log.warn('HA: this node holds its identity again; competing');
      this.feed({ type: 'identityHeld', now: this.clock.now() });
      return;
    }
    const by = describeMember(other);
    if (was === undefined) {
      this.o.log.error({ other: by }, 'HA: another live process of this cluster has this node\'s identity (the same hostname, api_addr and cluster_addr); this node stops competing and steps down if active');
    }
    this.feed({ type: 'identityTaken', now: this.clock.now(), by });
  }

  /** Stops the timers, stops the active role and releases the row; the process is ending. */
  async stop(): Promise<void> {
    this.feed({ type: 'sealed' });
    this.stopped = true;
    this.stopTicks?.();
    this.stopEchoes?.();
    await this.settled();
  }

  /** Resolves when every effect queued so far has run. */
  private async settled(): Promise<void> {
    await Promise.all([this.roleChain, this.leaseChain]);
  }

  /** What the fence of the next commit checks. */
  fenceState(): FenceState {
    if (this.fence !== undefined) return { mode: 'active', holder: this.fence.holder, epoch: this.fence.epoch };
    return this.state.mode === 'sealed' ? { mode: 'sealed' } : { mode: 'standby' };
  }

  /** A commit under `epoch` was refused by the fence: another node took over. */
  readonly fenced = (epoch: number): void => {
    this.o.log.warn({ epoch }, 'HA: a commit was refused by the fence (another node holds the lease); stepping down to standby');
    this.feed({ type: 'fenceRefused', epoch });
  };

  /** Resolves true once this node serves as the active node, false if it stops being active first or `timeoutMs` passes. */
  async untilServing(timeoutMs: number): Promise<boolean> {
    const until = this.clock.now() + timeoutMs;
    while (this.clock.now() < until) {
      if (this.isActive()) return true;
      if (this.state.mode !== 'active') return false;
      await this.clock.sleep(20);
    }
    return this.isActive();
  }

  /**
   * Storage failed under the active node (its engine failed closed): stop being active, release
   * the row and back off (another node takes over); the next activation reloads everything from
   * the database, which settles what the failed commit did.
   */
  storageFailed(reason?: string): void {
    if (this.state.mode !== 'active') return;
    this.activationFailed(this.state.epoch, `storage failed${reason === undefined ? '' : `: ${reason}`}`);
  }

  private activationFailed(epoch: number, reason: string): void {
    const now = this.clock.now();
    this.feed({ type: 'activationFailed', epoch, now, reason });
    // Once per failure: only when the machine took this one (not a stale epoch's).
    const failure = this.state.lastFailure;
    if (failure === undefined || failure.at !== now || this.state.mode === 'active') return;
    this.o.log.warn(
      { epoch, reason, failures: this.state.failures, competes_again_at: new Date(failure.until).toISOString() },
      'HA: this node failed to serve as the active node; it released the lock and backs off before competing again',
    );
  }

  /** Why the lock row could not be read or written lately (the database is unreachable), if so. */
  storeProblem(): string | undefined {
    return this.lastStoreError;
  }
  private lastStoreError: string | undefined;

  private storeAnswered(): void {
    this.lastStoreError = undefined;
  }

  private storeFailed(e: unknown): void {
    this.lastStoreError = e instanceof Error ? e.message : String(e);
  }

  /** Whether this node serves as the active node now (its role started and not told to stop). */
  isActive(): boolean {
    return this.serving && this.state.mode === 'active';
  }

  /**
   * How long (ms) this node surely stays the active node, by its own clock: until its lease's
   * deadline (lease.ts deadlineOf); undefined when it does not serve as the active node.
   */
  activeForMs(): number | undefined {
    if (!this.isActive() || this.state.mode !== 'active') return undefined;
    return deadlineOf(this.state) - this.clock.now();
  }

  view(): HaView {
    const l = leadership(this.state, this.clock.now());
    return { ...l, enabled: true, leaderRow: this.state.mode === 'active' ? this.ownRow() : this.leaderRow, epoch: this.state.epoch };
  }

  /** Told after every change of mode or leader. */
  onChange(listener: (view: HaView) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  members(maxAgeMs: number): Promise<LeaseMember[]> {
    return this.o.store.members(maxAgeMs);
  }

  /** The members as of the last echo (no query): the nodes that echoed recently. */
  knownMembers(): readonly LeaseMember[] {
    return this.lastMembers;
  }

  /**
   * sys/step-down on the active node: writes refuse from now on; stopping replication, releasing
   * the row and the cooldown follow on their chains. Does not wait for them: the request that
   * asked may have been relayed over the cluster port the stop closes.
   */
  stepDown(): void {
    this.feed({ type: 'stepDown', now: this.clock.now() });
  }

  readonly sealObserver = {
    opened: async (context: { initializing: boolean }): Promise<void> => {
      // sys/init opens the barrier only to write the root token, then seals: not a reason to compete.
      if (context.initializing) return;
      this.feed({ type: 'unsealed', now: this.clock.now() });
    },
    sealing: async (): Promise<void> => {
      this.feed({ type: 'sealed' });
      await this.settled();
    },
  };

  private ownRow(): LeaseRow | undefined {
    if (this.fence === undefined) return undefined;
    const me = this.o.me();
    return { holder: me.holder, epoch: this.fence.epoch, apiAddr: me.apiAddr, clusterAddr: me.clusterAddr };
  }

  private refreshLeader(): void {
    this.o.store.leader().then(
      (row) => this.setLeaderRow(row),
      () => undefined,
    );
  }

  private setLeaderRow(row: LeaseRow | undefined): void {
    const before = this.leaderRow;
    const me = this.o.me().holder;
    this.leaderRow = row?.holder === me ? undefined : row;
    if (before?.holder !== this.leaderRow?.holder || before?.epoch !== this.leaderRow?.epoch) this.changed();
  }

  private changed(): void {
    const v = this.view();
    for (const l of this.listeners) l(v);
  }

  /** Steps the machine; effects are queued on the chain in order. */
  private feed(event: Event): void {
    if (this.stopped) return;
    // What the keeper renewed while this thread was busy counts before any deadline is checked.
    this.absorbKeeper();
    const before = this.state.mode;
    const r = step(this.state, event);
    this.state = r.state;
    this.syncKeeper();
    for (const effect of r.effects) this.enqueue(effect);
    if (r.state.mode !== before) {
      this.o.log.info({ from: before, to: r.state.mode, epoch: r.state.epoch }, 'HA mode changed');
      this.changed();
    }
  }

  private absorbKeeper(): void {
    const s = this.state;
    if (s.mode !== 'active' || this.o.keeper === undefined) return;
    const sentAt = this.o.keeper.renewedFrom(s.epoch);
    if (sentAt !== undefined) this.state = step(s, { type: 'leaseExtended', epoch: s.epoch, sentAt }).state;
  }

  /** The keeper renews exactly while the machine is active, under its holder and epoch. */
  private syncKeeper(): void {
    const s = this.state;
    if (s.mode === 'active') this.o.keeper?.keep(s.holder, s.epoch);
    else this.o.keeper?.drop();
  }

  private enqueue(effect: Effect): void {
    // Writes refuse from the moment the machine says stop: the fence is cleared now, not when the
    // stop reaches the front of its chain.
    if (effect.type === 'stopActive') {
      this.fence = undefined;
      this.serving = false;
    }
    if (effect.type === 'leaderChanged') {
      this.leaderFromMachine(effect.leader);
      return;
    }
    const onRole = effect.type === 'becomeActive' || effect.type === 'stopActive';
    const run = (): Promise<void> =>
      this.perform(effect).catch((e: unknown) => {
        this.o.log.error({ err: e, effect: effect.type }, 'HA effect failed');
      });
    if (onRole) this.roleChain = this.roleChain.then(run);
    else this.leaseChain = this.leaseChain.then(run);
  }

  private async perform(effect: Exclude<Effect, { type: 'leaderChanged' }>): Promise<void> {
    switch (effect.type) {
      case 'tryAcquire':
        return this.tryAcquire(effect.graceMs);
      case 'renew':
        return this.renew();
      case 'becomeActive':
        return this.becomeActive(effect.epoch);
      case 'stopActive':
        await this.o.role.stop(effect.reason);
        this.o.log.warn({ reason: effect.reason }, 'HA: this node stopped being the active node');
        return;
      case 'release':
        // At once, beside the role's stop: writes refuse already (the fence was cleared), a commit
        // in flight holds the row FOR SHARE so the release waits for it, and the fence refuses
        // every commit once the row's lease has ended. The next node need not wait for the stop.
        await this.o.beforeRelease?.();
        await this.o.store.release(this.o.me().holder, effect.epoch).catch((e: unknown) => {
          this.o.log.warn({ err: (e as Error).message }, 'HA: releasing the lock row failed; it expires by itself');
        });
        return;
    }
  }

  private leaderFromMachine(leader: Leader | undefined): void {
    if (leader === undefined) {
      this.setLeaderRow(undefined);
      // Learn the new one soon rather than at the next echo.
      if (this.state.mode !== 'active') this.refreshLeader();
    }
  }

  private async tryAcquire(graceMs: number | undefined): Promise<void> {
    const me = this.o.me();
    this.feed({ type: 'acquireSent', now: this.clock.now() });
    const sentAt = this.sentAt();
    try {
      const r = await this.o.store.acquire(me, this.options.ttlMs, graceMs);
      this.storeAnswered();
      if (r.won) {
        this.feed({ type: 'acquired', epoch: r.epoch, holder: me.holder, sentAt });
      } else {
        this.setLeaderRow(r.leader);
        this.feed({ type: 'acquireLost', leader: r.leader === undefined ? undefined : { holder: r.leader.holder, apiAddr: r.leader.apiAddr, clusterAddr: r.leader.clusterAddr } });
      }
    } catch (e) {
      this.storeFailed(e);
      this.o.log.debug({ err: (e as Error).message }, 'HA: lock attempt failed');
      this.feed({ type: 'acquireLost', leader: undefined });
    }
  }

  /** The send time the machine recorded for the request in flight. */
  private sentAt(): number {
    const s = this.state;
    if ((s.mode === 'standby' || s.mode === 'cooldown') && s.acquire?.phase === 'sent') return s.acquire.sentAt;
    if (s.mode === 'active' && s.renew?.phase === 'sent') return s.renew.sentAt;
    return -1;
  }

  private async renew(): Promise<void> {
    if (this.state.mode !== 'active') return;
    const { holder, epoch } = { holder: this.o.me().holder, epoch: this.state.epoch };
    this.feed({ type: 'renewSent', now: this.clock.now() });
    const sentAt = this.sentAt();
    try {
      const ok = await this.o.store.renew(holder, epoch, this.options.ttlMs);
      this.storeAnswered();
      this.feed(ok ? { type: 'renewed', sentAt } : { type: 'renewFailed', now: this.clock.now() });
    } catch (e) {
      this.storeFailed(e);
      this.o.log.warn({ err: (e as Error).message }, 'HA: renewing the lease failed; retrying until its deadline');
      this.feed({ type: 'renewError', now: this.clock.now() });
    }
  }

  private async becomeActive(epoch: number): Promise<void> {
    if (this.state.mode !== 'active' || this.state.epoch !== epoch) return;
    this.fence = { holder: this.o.me().holder, epoch };
    this.leaderRow = undefined;
    try {
      await this.o.role.start(epoch);
      if (this.fence?.epoch !== epoch) return; // told to stop while starting: the stop follows
      this.serving = true;
      this.o.log.info({ epoch }, 'HA: this node is the active node');
      this.changed();
    } catch (e) {
      this.o.log.error({ err: e, epoch }, 'HA: becoming active failed; stepping down');
      this.activationFailed(epoch, e instanceof Error ? e.message : String(e));
    }
  }
}
