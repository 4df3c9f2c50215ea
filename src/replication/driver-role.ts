/**
 * The machinery of a ReplicationDriver (driver.ts extends it): the role's record and I/O, and the
 * carrying out of the state machine's effects in order: persisting, wiping, the primary's CA and
 * cluster server (PrimaryStreamer), the secondary's loop (SecondaryLoop), redeeming and probing
 * (activation-steps.ts), and a failed activation's way back. Operations reach it only through
 * `run(event, ctx)` inside `exclusive`: one at a time. Operator intents live in driver.ts.
 *
 *   class ReplicationDriver extends DriverRole { enablePrimary(a) { return this.exclusive(() => this.run({ type: 'enablePrimary', ... }, {})); } }
 */
import { randomUUID } from 'node:crypto';
import { InvalidRequest, ReplicatedWriteRefused } from '../core/errors.js';
import {
  crossKindRefusal, initialState, KIND_POLICY, refusalError, step, lookupSecondary,
  type Effect, type Event, type Kind, type KindPolicy, type Mode,
} from '../core/replication/index.js';
import { VERSION } from '../core/version.js';
import { probePrimaries, redeemActivation, wipeAndAdoptSeal } from './activation-steps.js';
import { applierFor, distrustUpstreamGuard, type Applier } from './applier.js';
import type { Bundle } from './bundle.js';
import { CoalescedReload } from './cache-reload.js';
import { timingOf, type DriverOptions } from './driver-options.js';
import { DemoteDrain } from './drain.js';
import { WriteForwarder } from './forwarder.js';
import { lastSeenRecord } from './last-seen.js';
import { SpareMaterial } from './primary-material.js';
import { PrimaryStreamer } from './primary-service.js';
import { PrimaryAddrs, type AddrsSnapshot } from './primary-addrs.js';
import { composeRecord, saveRecord, type SecondaryMaterial, type Workbench } from './role-record.js';
import { checkSecondary } from './secondary-credentials.js';
import { SecondaryLoop } from './secondary-loop.js';
import type { ReplicationServer, TlsMaterial } from './transport.js';

/** Operator intents, as the rules across kinds see them; facts are never refused there. */
const INTENTS: ReadonlySet<Event['type']> = new Set([
  'enablePrimary', 'demote', 'disablePrimary', 'issueToken', 'revokeSecondary', 'enableSecondary', 'promote', 'disableSecondary', 'updatePrimary',
]);

/** Request context of an operation that may redeem a token or probe addresses. */
export interface Ctx {
  token?: string;
  primaryApiAddr?: string;
  caFile?: string;
  caPath?: string;
  bundle?: Bundle;
  primaryClusterAddr?: string;
  /**
   * The role resumes as persisted (load after unseal): a secondary dials first the primary node
   * it last connected to, not the address activation or update-primary gave.
   */
  resume?: boolean;
  /**
   * The operation names the primary cluster to follow from now on (activation, update-primary by
   * token or by addresses): the secondary's list of its addresses starts afresh.
   */
  newPrimary?: boolean;
}

export abstract class DriverRole {
  readonly kind: Kind;
  protected readonly policy: KindPolicy;
  protected record: Workbench;
  protected server: ReplicationServer | undefined;
  protected streamer: PrimaryStreamer | undefined;
  protected loop: SecondaryLoop | undefined;
  protected readonly spare = new SpareMaterial();
  protected applier: Applier | undefined;
  protected boundClusterAddr = '';
  protected queue: Promise<unknown> = Promise.resolve();
  protected loaded = false;
  /**
   * The root token that called secondary/enable, in memory while bootstrapping: the wipe removed
   * every token, so if activation then fails (the primary refused the handshake, or the operator
   * left with secondary/disable) it is restored, and the operator can enable again. Those happen
   * only while bootstrapping, before the primary accepted this secondary and sent it any data; an
   * activation that succeeds drops it.
   */
  protected enabler: string | undefined;
  protected readonly drain: DemoteDrain;
  protected readonly forwarder: WriteForwarder;
  /** Reloads the core's caches as replicated data lands (a secondary that serves reads). */
  protected readonly reload = new CoalescedReload(
    () => this.o.core.reload(),
    (e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'could not reload caches after replicated changes'),
  );

  constructor(protected readonly o: DriverOptions) {
    this.kind = o.kind;
    this.policy = KIND_POLICY[o.kind];
    this.record = { state: initialState(o.kind) };
    this.drain = new DemoteDrain({ engine: o.engine, log: o.log, timeoutMs: o.timing?.demoteDrainTimeoutMs ?? 30_000, passes: [this.policy.record.key] });
    this.forwarder = new WriteForwarder({
      target: () => {
        const s = this.record.state;
        const m = this.record.secondary;
        if (!this.policy.forwardsWrites || s.mode !== 'secondary' || s.primary === null || s.secondaryId === null || !m) return undefined;
        // The node of the primary cluster the loop is connected to (HA: the active one).
        return { secondaryId: s.secondaryId, clusterAddr: this.loop?.primaryAddr || s.primary.clusterAddr, tls: this.secondaryTls(m) };
      },
      connect: (opts) => this.o.transport.connect(opts),
      applied: () => this.appliedUpstream(),
      settled: () => this.settled(),
      ...(o.forwardWaitMs !== undefined ? { waitMs: o.forwardWaitMs } : {}),
    });
  }

  protected now(): number {
    return (this.o.now ?? Date.now)();
  }

  protected version(): string {
    return this.o.version ?? VERSION;
  }

  /**
   * The upstream index a secondary that keeps its own WAL has applied (what it told its primary);
   * undefined where the node's own WAL is its primary's (DR) or nothing was applied yet.
   */
  appliedUpstream(): bigint | undefined {
    return this.policy.apply === 'own-wal' ? this.applier?.guard().index : undefined;
  }

  /** The cluster address secondaries are told: the operator's, else the bound listener. */
  clusterAddr(): string {
    const s = this.record.state;
    if (s.mode === 'primary' && s.primaryClusterAddr !== '') return s.primaryClusterAddr;
    return this.boundClusterAddr || this.o.clusterListen;
  }

  /** One operation at a time: effects of one intent never interleave with another's. */
  protected exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** A secondary makes the credentials it would need as a primary ahead of a promotion. */
  protected prepareSpare(): void {
    const s = this.record.state;
    if (s.mode === 'secondary') this.spare.prepare(s.clusterId, this.now());
  }

  /**
   * A secondary that keeps its own WAL (performance) never applies a write of a replicated key
   * that did not come from its primary: the engine refuses it (ReplicatedWriteRefused, 503) and
   * nothing changes. The HTTP dispatcher forwards such a request to the primary instead (see
   * `forward`); the refusal is the safety net for what it does not forward. Local and node
   * classes stay writable (its tokens, local mounts).
   */
  protected gateReplicatedWrites(): void {
    if (this.policy.apply !== 'own-wal') return;
    const m = this.record.state.mode;
    const gated = m === 'secondary' || m === 'bootstrapping';
    this.o.engine.guardReplicated(
      gated
        ? () => new ReplicatedWriteRefused(`this cluster is a ${this.policy.label} secondary: only its primary${this.primaryApiHint()} writes replicated data, and this request is not one it forwards (logins and requests without a client token are not); local mounts and tokens are written here`)
        : undefined,
    );
  }

  protected primaryApiHint(): string {
    const s = this.record.state;
    return (s.mode === 'secondary' || s.mode === 'bootstrapping') && s.primary?.apiAddr ? ` (${s.primary.apiAddr})` : '';
  }

  protected async run(event: Event, ctx: Ctx): Promise<void> {
    if (!this.loaded) throw new InvalidRequest(`${this.policy.label} replication state is not loaded (is the node unsealed, and not a DR secondary?)`);
    this.refuseAcrossKinds(event);
    const r = step(this.record.state, event);
    if (!r.ok) throw refusalError(r.error);
    const from = this.record.state.mode;
    this.record = { ...this.record, state: r.state };
    this.stateEvents(event, from);
    try {
      for (const e of r.effects) await this.perform(e, ctx);
    } finally {
      this.gateReplicatedWrites();
      this.prepareSpare();
    }
  }

  /** The events of an adopted step: a mode change, and a secondary's activation on its primary. */
  protected stateEvents(event: Event, from: Mode): void {
    const emit = this.o.emit;
    if (!emit) return;
    const to = this.record.state.mode;
    if (to !== from) emit('mode-changed', { from, to, cause: event.type });
    if (event.type === 'secondaryActivated') emit('secondary-activated', { secondary_id: event.id });
  }

  protected refuseAcrossKinds(event: Event): void {
    if (!INTENTS.has(event.type) || !this.o.otherMode) return;
    const why = crossKindRefusal(this.kind, event.type === 'enableSecondary' ? 'enableSecondary' : 'other', this.o.otherMode());
    if (why !== undefined) throw new InvalidRequest(why);
  }

  protected async persist(): Promise<void> {
    if (this.record.state.mode !== 'disabled' && this.record.lastError !== undefined) this.record = { ...this.record, lastError: undefined };
    await saveRecord(this.o.core.store(), composeRecord(this.record));
    await this.o.engine.putSystem(this.policy.modeSummary, Buffer.from(JSON.stringify({ mode: this.record.state.mode })));
  }

  protected async perform(effect: Effect, ctx: Ctx): Promise<void> {
    const log = this.o.log;
    switch (effect.type) {
      case 'persist':
        return this.persist();
      case 'wipe': {
        await this.loop?.stop();
        this.loop = undefined;
        // Ordering: wipe, then take over the primary's seal, then persist again under its keyring
        // (the wipe removed the record written under ours). A crash in between leaves a wiped,
        // disabled-looking node that needs a new activation token, never a half-joined one.
        await wipeAndAdoptSeal(this.o, ctx.bundle);
        await this.persist();
        log.warn(`storage wiped for ${this.policy.label} secondary activation`);
        return;
      }
      case 'createCa': {
        const s = this.record.state;
        const clusterId = s.mode === 'primary' || s.mode === 'secondary' ? s.clusterId : randomUUID();
        // Promoting a secondary of this cluster takes the spare it made ahead (primary-material.ts).
        const fresh = await this.spare.take(clusterId, this.now());
        this.record = {
          ...this.record,
          primary: { ...fresh, certs: {}, wrapAccessors: {} },
        };
        return;
      }
      case 'dropCa':
        this.record = { ...this.record, primary: undefined };
        return;
      case 'startServer':
        return this.startServer();
      case 'stopServer':
        return this.stopServer();
      case 'disconnect':
        this.server?.disconnect(effect.id);
        this.streamer?.forget(effect.id);
        return;
      case 'connect':
        return this.connect(effect.primary.clusterAddr, ctx);
      case 'disconnectPrimary':
        await this.loop?.stop();
        this.loop = undefined;
        return;
      case 'resync':
        // Only a kind with paths filters serves ids differently; a DR secondary's history is exact.
        if (this.policy.filters) await distrustUpstreamGuard(this.o.engine);
        return;
      case 'forgetPrimary':
        this.record = { ...this.record, secondary: undefined };
        return this.persist();
      case 'newEpoch':
        await this.o.engine.setEpoch(this.o.engine.epoch() + 1);
        return;
      case 'redeem': {
        const bundle = await redeemActivation(
          { kind: this.kind, label: this.policy.label, state: this.record.state, boxKey: this.record.boxKey, now: this.now(), version: this.version(), connect: (o) => this.o.transport.connect(o) },
          { token: ctx.token ?? '', primaryApiAddr: ctx.primaryApiAddr ?? '', caFile: ctx.caFile ?? '', caPath: ctx.caPath ?? '' },
        );
        ctx.bundle = bundle;
        const apiAddr = ctx.primaryApiAddr || bundle.primary_api_addr;
        return this.run(
          { type: 'redeemed', activation: { secondaryId: bundle.secondary_id, clusterId: bundle.cluster_id, primaryClusterAddr: bundle.primary_cluster_addr, primaryApiAddr: apiAddr } },
          ctx,
        );
      }
      case 'probe': {
        const m = this.record.secondary;
        const s = this.record.state;
        if (!m || s.mode !== 'secondary' || s.secondaryId === null) throw new InvalidRequest('this secondary holds no credentials to probe with; use token');
        const probe = { addrs: effect.addrs, tls: this.secondaryTls(m), secondaryId: s.secondaryId, clusterId: s.clusterId, connect: (o: { address: string; tls: TlsMaterial }) => this.o.transport.connect(o), log };
        return probePrimaries(probe, (primary) => this.run({ type: 'probed', primary }, { ...ctx, newPrimary: true }));
      }
    }
  }

  protected secondaryTls(m: SecondaryMaterial): TlsMaterial {
    return { caPem: m.caPem, certPem: m.certPem, keyPem: m.keyPem, serverName: m.serverName };
  }

  protected async startServer(): Promise<void> {
    const p = this.record.primary;
    const s = this.record.state;
    if (!p || s.mode !== 'primary') return;
    await this.stopServer();
    const streamer = new PrimaryStreamer({
      engine: this.o.engine,
      kind: this.kind,
      ...(this.o.pathsFilter ? { pathsFilter: this.o.pathsFilter } : {}),
      ...(this.o.forwarded ? { forwarded: this.o.forwarded } : {}),
      registry: { check: (id, fp) => checkSecondary({ state: this.record.state, primary: this.record.primary, label: this.policy.label, now: this.now() }, id, fp) },
      info: {
        clusterId: () => (this.record.state.mode === 'primary' ? this.record.state.clusterId : ''),
        nodeId: () => 'tessera',
        apiAddr: this.o.apiAddr,
        clusterAddr: () => this.clusterAddr(),
        clusterAddrs: () => this.o.clusterAddrs?.() ?? [],
      },
      onBootstrap: (id) => this.activated(id),
      ...(this.o.now ? { now: this.o.now } : {}),
      ...timingOf(this.o.timing),
      lastSeen: lastSeenRecord(() => this.o.core.store(), this.policy.lastSeen.secondaries),
      ...(this.o.emit ? { emit: this.o.emit } : {}),
      onPersistError: (e) => this.o.log.warn({ err: (e as Error).message }, 'could not persist secondaries\' last heartbeats'),
    });
    // Registered ids only: after a disable and enable (a new set) the old set's are gone.
    await streamer.load((id) => (lookupSecondary(s.secondaries, id)?.status ?? 'revoked') !== 'revoked').catch((e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'could not load secondaries\' last heartbeats'));
    this.streamer = streamer;
    this.server = await this.o.transport.serve({
      kind: this.kind,
      address: this.o.clusterListen,
      tls: { caPem: p.caCertPem, certPem: p.serverCertPem, keyPem: p.serverKeyPem, serverName: p.serverName },
      service: streamer,
    });
    this.boundClusterAddr = this.server.address;
    this.o.log.info({ cluster_addr: this.server.address }, `${this.policy.label} primary serving on the cluster port`);
  }

  protected async stopServer(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.close();
    await this.streamer?.close();
    this.streamer = undefined;
  }

  protected activated(id: string): Promise<void> {
    const s = this.record.state;
    if (s.mode !== 'primary' || lookupSecondary(s.secondaries, id)?.status !== 'token-issued') return Promise.resolve();
    return this.exclusive(() => this.run({ type: 'secondaryActivated', id, now: this.now() }, {}));
  }

  /**
   * The primary cluster's addresses of a secondary's loop: the one given (`clusterAddr`: by
   * activation, update-primary, or as persisted) always kept, every known one after it, and on a
   * resume the node last connected to dialled first. The bounded list is persisted when it changed.
   *
   * A new activation bundle (activation, or update-primary with a token) or an update-primary by
   * addresses names the primary cluster this secondary follows from now on: the list starts
   * afresh from the address given, and that cluster's replies fill it. Addresses of the cluster
   * it left are not kept, or a restart before they aged out could dial a node of the old cluster
   * that was never demoted, which would take the secondary back (issue 26 item 7).
   */
  protected async primaryAddrs(clusterAddr: string, ctx: Ctx): Promise<PrimaryAddrs> {
    const b = ctx.bundle;
    const before = this.record.secondary;
    const last = ctx.resume === true ? before?.connectedPrimaryClusterAddr : undefined;
    const known = b === undefined && ctx.newPrimary !== true ? (before?.knownPrimaryClusterAddrs ?? []) : [];
    const addrs = new PrimaryAddrs({ configured: clusterAddr, known, ...(last !== undefined ? { connected: last } : {}) });
    if (b) {
      this.record = { ...this.record, secondary: { caPem: b.ca_pem, certPem: b.cert_pem, keyPem: b.key_pem, serverName: b.server_name, knownPrimaryClusterAddrs: [...addrs.known] }, boxKey: undefined };
      await this.persist();
    } else if (before && (before.knownPrimaryClusterAddrs.join('\n') !== addrs.known.join('\n') || (before.connectedPrimaryClusterAddr ?? '') !== addrs.connected)) {
      this.record = { ...this.record, secondary: withAddrs(before, addrs.snapshot()) };
      await this.persist();
    }
    return addrs;
  }

  /** The loop learned addresses or connected elsewhere: persisted, unless the loop was replaced meanwhile. */
  protected saveAddrs(loop: () => SecondaryLoop | undefined, a: AddrsSnapshot): void {
    void this.exclusive(async () => {
      const m = this.record.secondary;
      const mode = this.record.state.mode;
      if (this.loop === undefined || this.loop !== loop() || !m || (mode !== 'secondary' && mode !== 'bootstrapping')) return;
      this.record = { ...this.record, secondary: withAddrs(m, a) };
      await this.persist();
    }).catch((e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'could not persist the primary cluster\'s addresses'));
  }

  protected async connect(clusterAddr: string, ctx: Ctx): Promise<void> {
    const addrs = await this.primaryAddrs(clusterAddr, ctx);
    const m = this.record.secondary;
    const s = this.record.state;
    if (!m || (s.mode !== 'secondary' && s.mode !== 'bootstrapping') || s.secondaryId === null) return;
    await this.loop?.stop();
    const tls = this.secondaryTls(m);
    const applier = applierFor(this.kind, this.o.engine);
    await applier.load?.();
    this.applier = applier;
    const ownWal = this.policy.apply === 'own-wal';
    const loop: SecondaryLoop = new SecondaryLoop({
      engine: this.o.engine,
      applier,
      // A secondary that serves reads (its own WAL) reloads its caches as replicated data lands.
      ...(ownWal
        ? {
            onApplied: (index: bigint) => {
              this.reload.soon();
              this.forwarder.applied(index);
            },
          }
        : {}),
      connect: (address) => this.o.transport.connect({ address, tls }),
      addrs,
      onAddrs: (a) => this.saveAddrs(() => loop, a),
      secondaryId: s.secondaryId,
      kind: this.kind,
      version: this.version(),
      apiAddr: this.o.apiAddr,
      clusterAddr: () => this.o.clusterListen,
      log: this.o.log.child({ role: `${this.kind}-secondary` }),
      ...(this.o.now ? { now: this.o.now } : {}),
      ...(this.o.timing?.heartbeatMs !== undefined ? { heartbeatMs: this.o.timing.heartbeatMs } : {}),
      lastSeen: lastSeenRecord(() => this.o.core.store(), this.policy.lastSeen.primary),
      ...(this.o.emit ? { emit: this.o.emit } : {}),
      onBootstrap: () => {
        if (this.record.state.mode === 'bootstrapping') {
          void this.exclusive(async () => {
            await this.run({ type: 'activated' }, {});
            // Never restored once activated: the node now holds the primary's data, and root over
            // it takes the primary's key holders (sys/generate-root with the primary's shares).
            this.enabler = undefined;
            if (ownWal) await this.o.core.reload();
          }).catch((e: unknown) => this.o.log.error({ err: e }, 'activation failed'));
        }
      },
      // The primary refused the handshake (id revoked, token expired by its clock) after the wipe:
      // retrying cannot help, so the activation ends in disabled, saying why.
      onFatal: (message) => {
        if (this.record.state.mode !== 'bootstrapping') return;
        void this.exclusive(() => this.failActivation(`the primary refused activation: ${message}`)).catch((e: unknown) => this.o.log.error({ err: e }, 'could not record the failed activation'));
      },
    });
    this.loop = loop;
    loop.start();
  }

  /** bootstrapping -> disabled with `why` kept for status; the enabling root token comes back. */
  protected async failActivation(why: string): Promise<void> {
    if (this.record.state.mode !== 'bootstrapping') return;
    // Stream stopped and token back before the state turns disabled (it does as the step is
    // adopted), so a client that sees disabled can already use both the token and last_error.
    await this.loop?.stop();
    this.loop = undefined;
    await this.restoreEnabler();
    this.record = { ...this.record, lastError: why };
    await this.run({ type: 'activationFailed' }, {});
    this.o.emit?.('activation-failed', { reason: why });
    this.o.log.warn({ reason: why }, `${this.policy.label} activation failed after the wipe; the cluster is disabled and needs a new activation token`);
  }

  /** Resolves once replicated data applied so far is visible to the core (caches reloaded). */
  settled(): Promise<void> {
    return this.reload.settled();
  }

  protected async restoreEnabler(): Promise<void> {
    const token = this.enabler;
    this.enabler = undefined;
    if (token !== undefined) await this.o.core.restoreRoot(token);
  }
}

/** `m` with the loop's addresses: the known list and the node last connected to (omitted before any). */
function withAddrs(m: SecondaryMaterial, a: AddrsSnapshot): SecondaryMaterial {
  const { connectedPrimaryClusterAddr: _dropped, ...rest } = m;
  return { ...rest, knownPrimaryClusterAddrs: [...a.known], ...(a.connected !== '' ? { connectedPrimaryClusterAddr: a.connected } : {}) };
}
