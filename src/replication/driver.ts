/**
 * The replication driver of one kind ('dr' or 'performance'): feeds operator intents and channel
 * facts to the pure state machine (src/core/replication) and carries out its effects, in the
 * machine's order, one operation at a time. It owns the role's I/O: the gRPC server of a primary,
 * the replication loop of a secondary, CA and certificates, activation bundles, and the persisted
 * record. What differs between the kinds is read from KIND_POLICY, never branched on by name.
 *
 *   const perf = new ReplicationDriver({ kind: 'performance', engine, seal, core, transport, log, ... });
 *   await perf.load();                                   // after unseal
 *   await perf.enablePrimary('');
 *   const { wrapInfo } = await perf.secondaryToken({ id: 'east', ttlSeconds: 1800, secondaryPublicKey: '' });
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { InvalidRequest, PermissionDenied, ReplicatedWriteRefused } from '../core/errors.js';
import {
  crossKindRefusal, initialState, KIND_POLICY, refusalError, resume, step, lookupSecondary,
  type Effect, type Event, type Kind, type KindPolicy, type Mode, type State, type TokenStatus,
} from '../core/replication/index.js';
import type { SealManager } from '../seal/index.js';
import type { StorageEngine } from '../storage/engine.js';
import type { Store } from '../storage/store.js';
import { generateBoxKeyPair, isBoxPublicKey, isJwt, peekJwt, sealTo, signActivationJwt, verifyActivationJwt } from './activation-token.js';
import { BUNDLE_VERSION, type Bundle } from './bundle.js';
import { applierFor, distrustUpstreamGuard, type Applier } from './applier.js';
import { composeRecord, loadRecord, saveRecord, workbenchOf, type SecondaryMaterial, type Workbench } from './role-record.js';
import { DemoteDrain, type DemoteReport } from './drain.js';
import type { EmitEvent } from './events.js';
import { WriteForwarder } from './forwarder.js';
import { lastSeenRecord } from './last-seen.js';
import { issueLeaf } from './pki.js';
import { SpareMaterial } from './primary-material.js';
import { foreignSet, probeFailure } from './probe-outcome.js';
import { PrimaryStreamer, type FilterSource } from './primary-service.js';
import { redeem } from './redeem.js';
import { confirmWithPrimary } from './activation-check.js';
import { VERSION } from '../core/version.js';
import { SecondaryLoop } from './secondary-loop.js';
import type { ForwardOutcome, ForwardReply, ForwardRequest, PrimaryClient, PrimaryService, ReplicationServer, TlsMaterial } from './transport.js';

export interface ReplicationTransport {
  /**
   * Serves this kind on the cluster port. Both kinds of a node share one listener (one port):
   * `tls.serverName` is the SNI name this kind's secondaries ask for, and closing the returned
   * server removes this kind only.
   */
  serve(opts: { kind: Kind; address: string; tls: TlsMaterial; service: PrimaryService }): Promise<ReplicationServer>;
  connect(opts: { address: string; tls: TlsMaterial }): PrimaryClient;
}

/** What the driver needs from the vault core. */
export interface CoreHooks {
  store(): Store;
  /** Rebinds the barrier to the (new) keyring and reloads caches. */
  reopen(): Promise<void>;
  wrap(data: Record<string, unknown>, ttlSeconds: number, path: string): Promise<{ token: string; accessor: string; ttl: number; creation_time: string; creation_path: string }>;
  /** Revokes a (wrapping) token by accessor; nothing when it is already gone. */
  revokeAccessor(accessor: string): Promise<void>;
  /** Recreates a root token with this exact value (an emptied node's way back in). */
  restoreRoot(token: string): Promise<void>;
  /** Reloads the core's caches (mounts, namespaces, policies) after replicated data changed. */
  reload(): Promise<void>;
}

/**
 * Secondary ids become certificate DNS SANs and registry keys, and show in status for ever:
 * 1..128 of letters, digits, '_', '.', '-', not starting with '.' or '-'.
 */
export const SECONDARY_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** What update-primary with a blank token made this secondary forget (for the warning). */
export interface Forgotten {
  readonly clusterId: string;
  readonly primaryClusterAddr: string;
  readonly primaryApiAddr: string;
}

export interface DriverOptions {
  readonly kind: Kind;
  readonly engine: StorageEngine;
  readonly seal: SealManager;
  readonly core: CoreHooks;
  readonly transport: ReplicationTransport;
  readonly log: Logger;
  /** host:port the cluster listener binds. */
  readonly clusterListen: string;
  readonly apiAddr: () => string;
  readonly now?: () => number;
  /** Heartbeat interval and timeout, and the longest a demote waits for secondaries (see dr-drain.ts). */
  readonly timing?: { readonly heartbeatMs?: number; readonly heartbeatTimeoutMs?: number; readonly demoteDrainTimeoutMs?: number };
  /** The mode of the other kind on this node, for the rules across kinds (crossKindRefusal). */
  readonly otherMode?: () => Mode;
  /** Performance paths filters (paths-filters.ts), applied to what the primary serves each secondary. */
  readonly pathsFilter?: FilterSource;
  /** A primary's executor of writes its performance secondaries forward (bound late by the node). */
  readonly forwarded?: () => ((secondaryId: string, req: ForwardRequest) => Promise<ForwardReply>) | undefined;
  /** How long a forwarded write's answer waits for this secondary to apply it. Default 2000 ms. */
  readonly forwardWaitMs?: number;
  /** Replication events of this kind (events.ts): state changes here, connections in the loop and streamer. */
  readonly emit?: EmitEvent;
  /** The version this node runs in the replication handshake; VERSION unless given (tests of mixed versions). */
  readonly version?: string;
}

/** Operator intents, as the rules across kinds see them; facts are never refused there. */
const INTENTS: ReadonlySet<Event['type']> = new Set([
  'enablePrimary', 'demote', 'disablePrimary', 'issueToken', 'revokeSecondary', 'enableSecondary', 'promote', 'disableSecondary', 'updatePrimary',
]);

/** Request context of an operation that may redeem a token or probe addresses. */
interface Ctx {
  token?: string;
  primaryApiAddr?: string;
  caFile?: string;
  caPath?: string;
  bundle?: Bundle;
  primaryClusterAddr?: string;
}

export class ReplicationDriver {
  readonly kind: Kind;
  private readonly policy: KindPolicy;
  private record: Workbench;
  private server: ReplicationServer | undefined;
  private streamer: PrimaryStreamer | undefined;
  private loop: SecondaryLoop | undefined;
  private readonly spare = new SpareMaterial();
  private applier: Applier | undefined;
  private boundClusterAddr = '';
  private queue: Promise<unknown> = Promise.resolve();
  private loaded = false;
  /**
   * The root token that called secondary/enable, in memory while bootstrapping: the wipe removed
   * every token, so if activation then fails (the primary refused the handshake, or the operator
   * left with secondary/disable) it is restored, and the operator can enable again. Those happen
   * only while bootstrapping, before the primary accepted this secondary and sent it any data; an
   * activation that succeeds drops it.
   */
  private enabler: string | undefined;
  private readonly drain: DemoteDrain;
  private readonly forwarder: WriteForwarder;

  constructor(private readonly o: DriverOptions) {
    this.kind = o.kind;
    this.policy = KIND_POLICY[o.kind];
    this.record = { state: initialState(o.kind) };
    this.drain = new DemoteDrain({ engine: o.engine, log: o.log, timeoutMs: o.timing?.demoteDrainTimeoutMs ?? 30_000, passes: [this.policy.record.key] });
    this.forwarder = new WriteForwarder({
      target: () => {
        const s = this.record.state;
        const m = this.record.secondary;
        if (!this.policy.forwardsWrites || s.mode !== 'secondary' || s.primary === null || s.secondaryId === null || !m) return undefined;
        return { secondaryId: s.secondaryId, clusterAddr: s.primary.clusterAddr, tls: this.secondaryTls(m) };
      },
      connect: (opts) => this.o.transport.connect(opts),
      applied: () => this.appliedUpstream(),
      settled: () => this.settled(),
      ...(o.forwardWaitMs !== undefined ? { waitMs: o.forwardWaitMs } : {}),
    });
  }

  /**
   * A write this performance secondary authorized, executed by its primary; answered once applied
   * here (bounded wait, then with a warning). ForwardFailed (503) when it cannot be forwarded.
   */
  forward(req: ForwardRequest): Promise<ForwardOutcome> {
    return this.forwarder.forward(req);
  }

  /** While a demote drains: the final index and who has not applied it yet. */
  get drainProgress(): DemoteDrain['progress'] {
    return this.drain.progress;
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  private version(): string {
    return this.o.version ?? VERSION;
  }

  get state(): State {
    return this.record.state;
  }

  get material(): Workbench {
    return this.record;
  }

  get primaryStreamer(): PrimaryStreamer | undefined {
    return this.streamer;
  }

  /**
   * As a primary of this kind: waits (bounded) until every connected secondary applied `index`
   * (PrimaryStreamer.waitApplied). True at once when this node is not a primary of this kind.
   */
  secondariesApplied(index: bigint, timeoutMs: number): Promise<boolean> {
    return this.streamer?.waitApplied(index, timeoutMs) ?? Promise.resolve(true);
  }

  get secondaryLoop(): SecondaryLoop | undefined {
    return this.loop;
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

  isSecondary(): boolean {
    return this.record.state.mode === 'secondary' || this.record.state.mode === 'bootstrapping';
  }

  /** One operation at a time: effects of one intent never interleave with another's. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Loads the persisted role after unseal and restarts it. */
  load(): Promise<void> {
    return this.exclusive(async () => {
      this.record = workbenchOf(await loadRecord(this.o.core.store(), this.kind));
      this.loaded = true;
      const r = resume(this.record.state);
      this.record = { ...this.record, state: r.state };
      for (const e of r.effects) await this.perform(e, {});
      this.gateReplicatedWrites();
      this.prepareSpare();
    });
  }

  /** A secondary makes the credentials it would need as a primary ahead of a promotion. */
  private prepareSpare(): void {
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
  private gateReplicatedWrites(): void {
    if (this.policy.apply !== 'own-wal') return;
    const m = this.record.state.mode;
    const gated = m === 'secondary' || m === 'bootstrapping';
    this.o.engine.guardReplicated(
      gated
        ? () => new ReplicatedWriteRefused(`this cluster is a ${this.policy.label} secondary: only its primary${this.primaryApiHint()} writes replicated data, and this request is not one it forwards (logins and requests without a client token are not); local mounts and tokens are written here`)
        : undefined,
    );
  }

  private primaryApiHint(): string {
    const s = this.record.state;
    return (s.mode === 'secondary' || s.mode === 'bootstrapping') && s.primary?.apiAddr ? ` (${s.primary.apiAddr})` : '';
  }

  /** Stops the role's I/O (seal, shutdown); the persisted role is untouched. */
  suspend(): Promise<void> {
    return this.exclusive(async () => {
      this.forwarder.close();
      await this.loop?.stop();
      this.loop = undefined;
      await this.stopServer();
      this.loaded = false;
    });
  }

  /** Forgets the role in memory without touching storage (a DR secondary's inert copy). */
  unload(): Promise<void> {
    return this.exclusive(async () => {
      this.forwarder.close();
      await this.loop?.stop();
      this.loop = undefined;
      await this.stopServer();
      this.record = { state: initialState(this.kind) };
      this.loaded = false;
      if (this.policy.apply === 'own-wal') this.o.engine.guardReplicated(undefined);
    });
  }

  get isLoaded(): boolean {
    return this.loaded;
  }

  private async run(event: Event, ctx: Ctx): Promise<void> {
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
  private stateEvents(event: Event, from: Mode): void {
    const emit = this.o.emit;
    if (!emit) return;
    const to = this.record.state.mode;
    if (to !== from) emit('mode-changed', { from, to, cause: event.type });
    if (event.type === 'secondaryActivated') emit('secondary-activated', { secondary_id: event.id });
  }

  private refuseAcrossKinds(event: Event): void {
    if (!INTENTS.has(event.type) || !this.o.otherMode) return;
    const why = crossKindRefusal(this.kind, event.type === 'enableSecondary' ? 'enableSecondary' : 'other', this.o.otherMode());
    if (why !== undefined) throw new InvalidRequest(why);
  }

  private async persist(): Promise<void> {
    if (this.record.state.mode !== 'disabled' && this.record.lastError !== undefined) this.record = { ...this.record, lastError: undefined };
    await saveRecord(this.o.core.store(), composeRecord(this.record));
    await this.o.engine.putSystem(this.policy.modeSummary, Buffer.from(JSON.stringify({ mode: this.record.state.mode })));
  }

  private async perform(effect: Effect, ctx: Ctx): Promise<void> {
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
        await this.o.engine.wipe();
        const b = ctx.bundle;
        if (b) {
          await this.o.seal.adoptFromPrimaryUnsealed(
            { sealConfig: b.seal_config as never, encryptedKeyring: Buffer.from(b.encrypted_keyring, 'base64') },
            Buffer.from(b.keyring, 'base64'),
          );
          await this.o.core.reopen();
        }
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
        this.refuseForeignJwt(ctx.token ?? '');
        const bundle = await redeem({
          token: ctx.token ?? '',
          primaryApiAddr: ctx.primaryApiAddr ?? '',
          caFile: ctx.caFile ?? '',
          caPath: ctx.caPath ?? '',
          boxKey: this.record.boxKey ? { publicKeyB64: this.record.boxKey.publicKeyB64, secretKey: new Uint8Array(Buffer.from(this.record.boxKey.secretKeyB64, 'base64')) } : undefined,
        });
        if (bundle.kind !== this.kind) throw new InvalidRequest(`the token is for ${KIND_POLICY[bundle.kind].label} replication, not ${this.policy.label}`);
        // A sealed token never reaches the primary before the wipe: its expiry is checked here.
        if (bundle.expires_at !== undefined && bundle.expires_at <= this.now()) {
          throw new InvalidRequest(`the activation token for "${bundle.secondary_id}" expired at ${new Date(bundle.expires_at).toISOString()}; ask the primary for a new one`);
        }
        // Activation wipes this node: the primary confirms first that it would accept this secondary.
        if (this.record.state.mode === 'disabled') await confirmWithPrimary({ bundle, connect: (o) => this.o.transport.connect(o), version: this.version() });
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
        const reasons: string[] = [];
        for (const addr of effect.addrs) {
          const client = this.o.transport.connect({ address: addr, tls: this.secondaryTls(m) });
          try {
            const info = await client.ping(s.secondaryId, 2000);
            if (info.clusterId !== s.clusterId) {
              log.warn({ addr, cluster_id: info.clusterId }, 'probed address belongs to another replication set');
              reasons.push(foreignSet(addr, info.clusterId));
              continue;
            }
            log.info({ addr }, 'update-primary: address answered');
            return this.run({ type: 'probed', primary: { clusterAddr: addr, apiAddr: info.apiAddr } }, ctx);
          } catch (e) {
            // Each address says what happened there (refused, not a primary, unreachable).
            reasons.push(probeFailure(addr, e));
            log.info({ addr, err: (e as Error).message }, 'update-primary: address did not answer as a primary of the set');
          } finally {
            client.close();
          }
        }
        throw new InvalidRequest(`none of the update_primary_addrs answered as a primary of replication set ${s.clusterId} (${reasons.join('; ')})`);
      }
    }
  }

  private secondaryTls(m: SecondaryMaterial): TlsMaterial {
    return { caPem: m.caPem, certPem: m.certPem, keyPem: m.keyPem, serverName: m.serverName };
  }

  private async startServer(): Promise<void> {
    const p = this.record.primary;
    const s = this.record.state;
    if (!p || s.mode !== 'primary') return;
    await this.stopServer();
    const streamer = new PrimaryStreamer({
      engine: this.o.engine,
      kind: this.kind,
      ...(this.o.pathsFilter ? { pathsFilter: this.o.pathsFilter } : {}),
      ...(this.o.forwarded ? { forwarded: this.o.forwarded } : {}),
      registry: { check: (id, fp) => this.authorize(id, fp) },
      info: { clusterId: () => (this.record.state.mode === 'primary' ? this.record.state.clusterId : ''), nodeId: () => 'tessera', apiAddr: this.o.apiAddr, clusterAddr: () => this.clusterAddr() },
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

  private async stopServer(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.close();
    await this.streamer?.close();
    this.streamer = undefined;
  }

  /** The transport's per-call check: a registered, unrevoked, unexpired id with its own certificate. */
  private authorize(id: string, fingerprint: string): TokenStatus {
    const s = this.record.state;
    if (s.mode !== 'primary') throw new PermissionDenied(`this cluster is not a ${this.policy.label} primary`);
    const entry = lookupSecondary(s.secondaries, id);
    if (!entry || entry.status === 'revoked') throw new PermissionDenied(`secondary "${id}" is not registered or was revoked`);
    if (entry.status === 'token-issued' && entry.expiresAt < this.now()) throw new PermissionDenied(`the activation token of secondary "${id}" expired`);
    if (this.record.primary?.certs[id] !== fingerprint) throw new PermissionDenied(`the certificate presented is not the one issued to "${id}"`);
    return entry.status;
  }

  private activated(id: string): Promise<void> {
    const s = this.record.state;
    if (s.mode !== 'primary' || lookupSecondary(s.secondaries, id)?.status !== 'token-issued') return Promise.resolve();
    return this.exclusive(() => this.run({ type: 'secondaryActivated', id, now: this.now() }, {}));
  }

  private async connect(clusterAddr: string, ctx: Ctx): Promise<void> {
    const b = ctx.bundle;
    if (b) {
      const known = new Set([...(this.record.secondary?.knownPrimaryClusterAddrs ?? []), b.primary_cluster_addr]);
      this.record = { ...this.record, secondary: { caPem: b.ca_pem, certPem: b.cert_pem, keyPem: b.key_pem, serverName: b.server_name, knownPrimaryClusterAddrs: [...known] }, boxKey: undefined };
      await this.persist();
    } else if (this.record.secondary && !this.record.secondary.knownPrimaryClusterAddrs.includes(clusterAddr)) {
      this.record = { ...this.record, secondary: { ...this.record.secondary, knownPrimaryClusterAddrs: [...this.record.secondary.knownPrimaryClusterAddrs, clusterAddr] } };
      await this.persist();
    }
    const m = this.record.secondary;
    const s = this.record.state;
    if (!m || (s.mode !== 'secondary' && s.mode !== 'bootstrapping') || s.secondaryId === null) return;
    await this.loop?.stop();
    const tls = this.secondaryTls(m);
    const applier = applierFor(this.kind, this.o.engine);
    await applier.load?.();
    this.applier = applier;
    const ownWal = this.policy.apply === 'own-wal';
    this.loop = new SecondaryLoop({
      engine: this.o.engine,
      applier,
      // A secondary that serves reads (its own WAL) reloads its caches as replicated data lands.
      ...(ownWal
        ? {
            onApplied: (index: bigint) => {
              this.reloadSoon();
              this.forwarder.applied(index);
            },
          }
        : {}),
      connect: () => this.o.transport.connect({ address: clusterAddr, tls }),
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
    this.loop.start();
  }

  /** bootstrapping -> disabled with `why` kept for status; the enabling root token comes back. */
  private async failActivation(why: string): Promise<void> {
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

  /** Coalesced reload of the core's caches: one running, at most one queued. */
  private reloading: Promise<void> | undefined;
  private reloadQueued = false;
  private reloadSoon(): void {
    if (this.reloading) {
      this.reloadQueued = true;
      return;
    }
    this.reloading = this.o.core
      .reload()
      .catch((e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'could not reload caches after replicated changes'))
      .finally(() => {
        this.reloading = undefined;
        if (this.reloadQueued) {
          this.reloadQueued = false;
          this.reloadSoon();
        }
      });
  }

  /** Resolves once replicated data applied so far is visible to the core (caches reloaded). */
  async settled(): Promise<void> {
    while (this.reloading) await this.reloading;
  }

  /**
   * While a reload of the core's caches runs, the wait for it; undefined otherwise (no cost on the
   * request path). Status shows an applied index in the same tick the reload starts, so a client
   * that saw it and then asks waits for the data to be visible instead of getting a 404.
   */
  pendingVisibility(): Promise<void> | undefined {
    return this.reloading ? this.settled() : undefined;
  }

  private async restoreEnabler(): Promise<void> {
    const token = this.enabler;
    this.enabler = undefined;
    if (token !== undefined) await this.o.core.restoreRoot(token);
  }

  /**
   * update-primary with a wrapped token of another set is refused before the token is spent: our
   * JWTs name their set (`cluster_id`). Tokens without the claim go on to the usual check.
   */
  private refuseForeignJwt(token: string): void {
    const s = this.record.state;
    if (!isJwt(token.trim())) return;
    // The kind is inside the token: one of the other kind is refused before it is spent.
    const kind = peekJwt(token.trim()).kind;
    if (kind !== undefined && kind !== this.kind) {
      throw new InvalidRequest(`the token activates ${kind === 'dr' || kind === 'performance' ? KIND_POLICY[kind].label : 'another kind of'} replication, not ${this.policy.label}; it was not redeemed`);
    }
    if (s.mode !== 'secondary') return;
    const claimed = peekJwt(token.trim()).cluster_id;
    if (claimed !== undefined && claimed !== s.clusterId) {
      throw new InvalidRequest(
        `the token belongs to replication set "${claimed.slice(0, 64)}" but this secondary belongs to "${s.clusterId}"; it was not redeemed`,
      );
    }
  }

  // ---- operator intents (authorization is the caller's) ----

  enablePrimary(primaryClusterAddr: string): Promise<void> {
    return this.exclusive(() => this.run({ type: 'enablePrimary', clusterId: randomUUID(), primaryClusterAddr }, {}));
  }

  /**
   * Planned switchover: validate, drain (writes stop; connected secondaries apply the last index,
   * bounded), then demote. The report says who confirmed.
   */
  demote(): Promise<DemoteReport> {
    return this.exclusive(async () => {
      if (!this.loaded) throw new InvalidRequest('replication state is not loaded (is the node unsealed?)');
      const check = step(this.record.state, { type: 'demote' });
      if (!check.ok) throw refusalError(check.error);
      const s = this.record.state;
      const active = s.mode === 'primary' ? Object.keys(s.secondaries).filter((id) => lookupSecondary(s.secondaries, id)?.status === 'active') : [];
      try {
        const report = await this.drain.run(this.streamer, active);
        // Ordering: the fence stays up through the step (it lets the role record through), and
        // the step installs the secondary gate before the fence lifts, so no write is accepted
        // between the drain's final index and the demote (issue 17 item 2: lifting it early let
        // performance writes be acknowledged after the drain and then diverge).
        await this.run({ type: 'demote' }, {});
        return report;
      } finally {
        // Once demoted, the secondary gate refuses writes; if the demote failed, writes resume.
        this.drain.release();
      }
    });
  }

  disablePrimary(): Promise<void> {
    return this.exclusive(() => this.run({ type: 'disablePrimary' }, {}));
  }

  /** Issues an activation token: a wrapped JWT, or the bundle sealed to `secondaryPublicKey`. */
  secondaryToken(req: { id: string; ttlSeconds: number; secondaryPublicKey: string }): Promise<{ wrapInfo?: Record<string, unknown>; token?: string }> {
    return this.exclusive(async () => {
      // Everything is validated before the id is registered: a refused request registers nothing.
      if (!SECONDARY_ID.test(req.id)) {
        throw new InvalidRequest(
          `id "${req.id.slice(0, 40)}${req.id.length > 40 ? '...' : ''}" is not a valid secondary id: 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'`,
        );
      }
      if (!Number.isSafeInteger(req.ttlSeconds) || req.ttlSeconds <= 0) throw new InvalidRequest('ttl must be a positive whole number of seconds');
      if (req.secondaryPublicKey !== '' && !isBoxPublicKey(req.secondaryPublicKey)) {
        throw new InvalidRequest('secondary_public_key is not a valid base64 X25519 public key');
      }
      const now = this.now();
      await this.run({ type: 'issueToken', id: req.id, now, ttlMs: req.ttlSeconds * 1000 }, {});
      const p = this.record.primary;
      const s = this.record.state;
      if (!p || s.mode !== 'primary') throw new InvalidRequest(`this cluster is not a ${this.policy.label} primary`);
      const ca = { certPem: p.caCertPem, keyPem: p.caKeyPem };
      const leaf = await issueLeaf(ca, { name: req.id, usage: 'client', ttlDays: 3650, now: this.now() });
      this.record = { ...this.record, primary: { ...p, certs: { ...p.certs, [req.id]: leaf.fingerprint } } };
      await this.persist();
      const exported = await this.o.seal.exportForSecondary();
      const bundle: Bundle = {
        v: BUNDLE_VERSION,
        kind: this.kind,
        cluster_id: s.clusterId,
        secondary_id: req.id,
        primary_cluster_addr: this.clusterAddr(),
        primary_api_addr: this.o.apiAddr(),
        server_name: p.serverName,
        ca_pem: p.caCertPem,
        cert_pem: leaf.certPem,
        key_pem: leaf.keyPem,
        seal_config: { ...exported.sealConfig },
        encrypted_keyring: exported.encryptedKeyring.toString('base64'),
        keyring: this.o.seal.exportKeyring().toString('base64'),
        expires_at: now + req.ttlSeconds * 1000,
      };
      if (req.secondaryPublicKey !== '') {
        let token: string;
        try {
          token = sealTo(req.secondaryPublicKey, Buffer.from(JSON.stringify(bundle)));
        } catch {
          throw new InvalidRequest('secondary_public_key is not a valid base64 X25519 public key');
        }
        return { token };
      }
      const path = `sys/replication/${this.kind}/primary/secondary-token`;
      const wrapped = await this.o.core.wrap(bundle as unknown as Record<string, unknown>, req.ttlSeconds, path);
      const latest = this.record.primary ?? p;
      this.record = { ...this.record, primary: { ...latest, wrapAccessors: { ...latest.wrapAccessors, [req.id]: wrapped.accessor } } };
      await this.persist();
      const jwt = await signActivationJwt({ jti: wrapped.token, addr: this.o.apiAddr(), accessor: wrapped.accessor, ttlSeconds: req.ttlSeconds, now: new Date(now), clusterId: s.clusterId, kind: this.kind }, p.signing.privateJwk);
      return { wrapInfo: { token: jwt, accessor: wrapped.accessor, ttl: wrapped.ttl, creation_time: wrapped.creation_time, creation_path: path, wrapped_accessor: '' } };
    });
  }

  /** sys/wrapping/unwrap of an activation JWT: the wrapping token it names, if this primary signed it. */
  async resolveActivationJwt(token: string): Promise<string> {
    const p = this.record.primary;
    if (!isJwt(token)) return token;
    if (!p) throw new InvalidRequest('wrapping token is not valid or does not exist');
    const claims = await verifyActivationJwt(token, p.signing.publicJwk, new Date(this.now()));
    return claims.jti;
  }

  /** Revokes the id, and with it the wrapping token of its bundle, so the token can no longer be redeemed. */
  revokeSecondary(id: string): Promise<void> {
    return this.exclusive(async () => {
      await this.run({ type: 'revokeSecondary', id }, {});
      const accessors = this.record.primary?.wrapAccessors ?? {};
      if (Object.hasOwn(accessors, id)) await this.o.core.revokeAccessor(accessors[id] as string);
    });
  }

  generatePublicKey(): Promise<string> {
    return this.exclusive(async () => {
      if (this.record.state.mode !== 'disabled') throw new InvalidRequest(`generate-public-key is for a cluster about to become a ${this.policy.label} secondary; this one is not disabled`);
      const pair = generateBoxKeyPair();
      this.record = { ...this.record, boxKey: { publicKeyB64: pair.publicKeyB64, secretKeyB64: Buffer.from(pair.secretKey).toString('base64') } };
      await this.persist();
      return pair.publicKeyB64;
    });
  }

  /** `restoreToken`: the caller's root token, recreated if the activation fails after the wipe. */
  enableSecondary(req: { token: string; primaryApiAddr: string; caFile: string; caPath: string; restoreToken?: string }): Promise<void> {
    return this.exclusive(async () => {
      this.enabler = req.restoreToken;
      try {
        await this.run({ type: 'enableSecondary' }, { token: req.token, primaryApiAddr: req.primaryApiAddr, caFile: req.caFile, caPath: req.caPath });
      } finally {
        if (this.record.state.mode !== 'bootstrapping') this.enabler = undefined;
      }
    });
  }

  promote(req: { force: boolean; primaryClusterAddr: string }): Promise<void> {
    return this.exclusive(async () => {
      const s = this.record.state;
      if (s.mode === 'secondary' && s.primary !== null && this.loop) {
        await this.run({ type: 'streamState', state: this.loop.progress.state }, {});
      }
      const behind = this.loop?.behindBy() ?? null;
      await this.run({ type: 'promote', force: req.force, behind, primaryClusterAddr: req.primaryClusterAddr }, {});
      await this.o.core.reopen();
      this.o.log.warn({ cluster_id: this.record.state.mode === 'primary' ? this.record.state.clusterId : '' }, `promoted to ${this.policy.label} primary`);
    });
  }

  /**
   * Leaves the set keeping the replicated data, which the core then serves (mounts, policies,
   * tokens): it reopens, as after promote. From bootstrapping the node is empty; the enabling
   * root token, when known, is restored.
   */
  disableSecondary(): Promise<void> {
    return this.exclusive(async () => {
      const wasBootstrapping = this.record.state.mode === 'bootstrapping';
      await this.run({ type: 'disableSecondary' }, {});
      await this.o.core.reopen();
      if (wasBootstrapping) await this.restoreEnabler();
    });
  }

  /**
   * A blank token forgets the primary (Vault-compatible); the answer then says what was forgotten,
   * so a script whose `$(...)` failed does not detach a secondary silently.
   */
  updatePrimary(req: { token?: string; addrs?: readonly string[]; primaryApiAddr: string; caFile: string; caPath: string }): Promise<{ forgotten?: Forgotten }> {
    return this.exclusive(async () => {
      const before = this.record.state;
      await this.run(
        { type: 'updatePrimary', ...(req.token !== undefined ? { token: req.token } : {}), ...(req.addrs !== undefined ? { addrs: req.addrs } : {}) },
        { ...(req.token !== undefined ? { token: req.token } : {}), primaryApiAddr: req.primaryApiAddr, caFile: req.caFile, caPath: req.caPath },
      );
      if (req.token !== '' || before.mode !== 'secondary') return {};
      const forgotten: Forgotten = { clusterId: before.clusterId, primaryClusterAddr: before.primary?.clusterAddr ?? '', primaryApiAddr: before.primary?.apiAddr ?? '' };
      this.o.log.warn({ cluster_id: forgotten.clusterId, primary_cluster_addr: forgotten.primaryClusterAddr }, 'update-primary with a blank token: the primary and its credentials were forgotten');
      return { forgotten };
    });
  }
}

function timingOf(t: DriverOptions['timing']): { heartbeatMs?: number; heartbeatTimeoutMs?: number } {
  return {
    ...(t?.heartbeatMs !== undefined ? { heartbeatMs: t.heartbeatMs } : {}),
    ...(t?.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: t.heartbeatTimeoutMs } : {}),
  };
}
