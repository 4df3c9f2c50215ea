/**
 * The replication driver of one kind ('dr' or 'performance'): feeds operator intents and channel
 * facts to the pure state machine (src/core/replication) and carries out its effects, in the
 * machine's order, one operation at a time. It owns the role's I/O: the gRPC server of a primary,
 * the replication loop of a secondary, CA and certificates, activation bundles, and the persisted
 * record. What differs between the kinds is read from KIND_POLICY, never branched on by name.
 * This file holds the public face: lifecycle (load, suspend, unload), what status reads, and the
 * operator intents; the effects and the role's I/O are in driver-role.ts, its options in
 * driver-options.ts.
 *
 *   const perf = new ReplicationDriver({ kind: 'performance', engine, seal, core, transport, log, ... });
 *   await perf.load();                                   // after unseal
 *   await perf.enablePrimary('');
 *   const { wrapInfo } = await perf.secondaryToken({ id: 'east', ttlSeconds: 1800, secondaryPublicKey: '' });
 */
import { randomUUID } from 'node:crypto';
import { InvalidRequest } from '../core/errors.js';
import { initialState, lookupSecondary, refusalError, resume, step, type State } from '../core/replication/index.js';
import { generateBoxKeyPair, isJwt, verifyActivationJwt } from './activation-token.js';
import { DriverRole } from './driver-role.js';
import type { Forgotten } from './driver-options.js';
import type { DemoteDrain, DemoteReport } from './drain.js';
import type { PrimaryStreamer } from './primary-service.js';
import { loadRecord, workbenchOf, type Workbench } from './role-record.js';
import { mintActivationToken, validateTokenRequest, type MintDeps, type TokenAnswer, type TokenRequest } from './secondary-credentials.js';
import type { SecondaryLoop } from './secondary-loop.js';
import type { ForwardOutcome, ForwardRequest } from './transport.js';

export { SECONDARY_ID, type CoreHooks, type DriverOptions, type Forgotten, type ReplicationTransport } from './driver-options.js';

export class ReplicationDriver extends DriverRole {
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

  isSecondary(): boolean {
    return this.record.state.mode === 'secondary' || this.record.state.mode === 'bootstrapping';
  }

  /** Loads the persisted role after unseal and restarts it. */
  load(): Promise<void> {
    return this.exclusive(async () => {
      this.record = workbenchOf(await loadRecord(this.o.core.store(), this.kind));
      this.loaded = true;
      const r = resume(this.record.state);
      this.record = { ...this.record, state: r.state };
      for (const e of r.effects) await this.perform(e, { resume: true });
      this.gateReplicatedWrites();
      this.prepareSpare();
    });
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

  /**
   * While a reload of the core's caches runs, the wait for it; undefined otherwise (no cost on the
   * request path). Status shows an applied index in the same tick the reload starts, so a client
   * that saw it and then asks waits for the data to be visible instead of getting a 404.
   */
  pendingVisibility(): Promise<void> | undefined {
    return this.reload.pending();
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
  secondaryToken(req: TokenRequest): Promise<TokenAnswer> {
    return this.exclusive(async () => {
      validateTokenRequest(req);
      const now = this.now();
      await this.run({ type: 'issueToken', id: req.id, now, ttlMs: req.ttlSeconds * 1000 }, {});
      const s = this.record.state;
      if (!this.record.primary || s.mode !== 'primary') throw new InvalidRequest(`this cluster is not a ${this.policy.label} primary`);
      const deps: MintDeps = {
        kind: this.kind,
        label: this.policy.label,
        clusterId: s.clusterId,
        seal: this.o.seal,
        core: this.o.core,
        apiAddr: () => this.o.apiAddr(),
        clusterAddr: () => this.clusterAddr(),
        now: () => this.now(),
        primary: () => this.record.primary,
        savePrimary: async (p) => {
          this.record = { ...this.record, primary: p };
          await this.persist();
        },
      };
      return mintActivationToken(deps, req, now);
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

  /**
   * A DR secondary promoted holds the performance primary role its old primary cluster had,
   * with that cluster's `primary_cluster_addr`: this cluster's own is adopted (the promote's, or
   * '' for the bound listener), so its performance secondaries are never told the old cluster's
   * address, whose node, never demoted, would take them back (issue 26 item 7).
   */
  adoptClusterAddr(addr: string): Promise<void> {
    return this.exclusive(async () => {
      const s = this.record.state;
      if (s.mode !== 'primary' || s.primaryClusterAddr === addr) return;
      this.record = { ...this.record, state: { ...s, primaryClusterAddr: addr } };
      await this.persist();
      this.o.log.info({ primary_cluster_addr: addr }, `${this.policy.label} primary: the promoted cluster's own cluster address replaces the old primary cluster's`);
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
