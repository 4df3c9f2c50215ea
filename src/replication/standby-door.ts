/**
 * What an HA standby serves on the cluster port: for every kind its cluster is primary of, that
 * kind's TLS identity (cluster-wide material in the role record, which the shared database gives
 * every unsealed node), so a secondary completes the same mTLS handshake with any node, and a
 * service that authorizes each call exactly as the active node's does (the secondary's registry
 * entry and certificate fingerprint, then the kind's serve policy) and then refuses it with
 * NotActiveNode, naming the active node. It serves no data and applies nothing: every method
 * throws. A certificate the active node would refuse gets that refusal, never the address; the
 * record is read from storage at each call, so a secondary registered or revoked a moment ago on
 * the active node is judged as the active node judges it.
 *
 *   for (const r of await standbyRegistrations({ store, activeClusterAddr, now })) {
 *     if (r.version !== served.get(r.kind)) await listener.serve(r);   // re-served when it changed
 *   }
 */
import { createHash } from 'node:crypto';
import { KIND_POLICY, KINDS, type Kind } from '../core/replication/index.js';
import type { Store } from '../storage/store.js';
import { NotActiveNode } from './channel-error.js';
import { loadRecord, workbenchOf } from './role-record.js';
import { checkSecondary } from './secondary-credentials.js';
import { servePolicy } from './serve-policy.js';
import type { ClusterCall, Peer, PrimaryService, TlsMaterial } from './transport.js';

export interface StandbyDoorOptions {
  /** The vault's store (unsealed): the role records, as the active node last wrote them. */
  readonly store: () => Store;
  /** host:port of the active node; undefined while none is known (an election). */
  readonly activeClusterAddr: () => string | undefined;
  readonly now: () => number;
}

export interface DoorRegistration {
  readonly kind: Kind;
  readonly tls: TlsMaterial;
  readonly service: PrimaryService;
  /** Changes whenever the role record does: serve again only then. */
  readonly version: string;
}

/** The kinds a standby answers for now: those its cluster serves as a primary (not performance on a DR secondary). */
export async function standbyRegistrations(o: StandbyDoorOptions): Promise<DoorRegistration[]> {
  const store = o.store();
  const records = await Promise.all(KINDS.map(async (kind) => ({ kind, raw: await loadRecord(store, kind) })));
  const drMode = records.find((r) => r.kind === 'dr')?.raw.state.mode;
  const out: DoorRegistration[] = [];
  for (const { kind, raw } of records) {
    const w = workbenchOf(raw);
    const p = w.primary;
    if (w.state.mode !== 'primary' || p === undefined) continue;
    // A DR secondary holds its primary's performance role but serves none of it (the unit's rule).
    if (kind === 'performance' && (drMode === 'secondary' || drMode === 'bootstrapping')) continue;
    out.push({
      kind,
      tls: { caPem: p.caCertPem, certPem: p.serverCertPem, keyPem: p.serverKeyPem, serverName: p.serverName },
      service: standbyService(kind, o),
      version: createHash('sha256').update(JSON.stringify(raw)).digest('hex'),
    });
  }
  return out;
}

/** One kind's refusing service: every call is checked on the record as stored now, then refused. */
function standbyService(kind: Kind, o: StandbyDoorOptions): PrimaryService {
  const policy = servePolicy(kind);
  const label = KIND_POLICY[kind].label;
  const refuse = async (peer: Peer, call: ClusterCall): Promise<never> => {
    const w = workbenchOf(await loadRecord(o.store(), kind));
    policy.admitCall(checkSecondary({ state: w.state, primary: w.primary, label, now: o.now() }, peer.secondaryId, peer.fingerprint), call);
    throw new NotActiveNode(o.activeClusterAddr());
  };
  return {
    // Checked in each method instead, on the record read then: a record held here would lag the
    // active node's (a secondary registered a moment ago would be refused). So a malformed
    // message is refused as such before the certificate's registry check, unlike on the active
    // node; either way nothing is served and no address is given.
    authorize: () => undefined,
    ping: (peer) => refuse(peer, 'ping'),
    bootstrap: (peer) => refuse(peer, 'bootstrap'),
    streamWal: (peer, _req, sink) => {
      refuse(peer, 'stream').catch((e: unknown) => sink.fail(e as Error));
    },
    heartbeat: (peer) => refuse(peer, 'heartbeat'),
    openSnapshot: (peer) => refuse(peer, 'reconcile'),
    closeSnapshot: (peer) => refuse(peer, 'reconcile'),
    pageHashes: (peer) => refuse(peer, 'reconcile'),
    subpageHashes: (peer) => refuse(peer, 'reconcile'),
    leaves: (peer) => refuse(peer, 'reconcile'),
    fetchValues: (peer) => refuse(peer, 'reconcile'),
    forward: (peer) => refuse(peer, 'forward'),
  };
}
