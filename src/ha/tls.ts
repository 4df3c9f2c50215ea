/**
 * The HA certificates of a cluster: one CA, a server leaf the active node serves HA forwarding
 * under, and a client leaf standbys relay with. Made by the first node to become active and kept
 * behind the barrier (a node-class key: never replicated, shared by the nodes of the cluster
 * through their one database), so only a node that could unseal can relay.
 *
 *   const tls = await ensureHaTls(store, Date.now());   // the active node, at every activation
 *   const tls = await loadHaTls(store);                 // a standby, before its first relay
 */
import { createCa, issueLeaf, type TlsMaterial } from '../replication/index.js';
import type { Store } from '../storage/store.js';

const KEY = 'node/ha/tls';
/** The server name HA forwarding is served under on the cluster port (its SNI picks it). */
export const HA_SERVER_NAME = 'ha.tessera.cluster';
const CLIENT_NAME = 'standby.tessera.cluster';
const TTL_DAYS = 3650;

export interface HaTls {
  readonly server: TlsMaterial;
  readonly client: TlsMaterial;
}

interface Stored {
  readonly caPem: string;
  readonly serverCertPem: string;
  readonly serverKeyPem: string;
  readonly clientCertPem: string;
  readonly clientKeyPem: string;
}

function materialOf(s: Stored): HaTls {
  return {
    server: { caPem: s.caPem, certPem: s.serverCertPem, keyPem: s.serverKeyPem, serverName: HA_SERVER_NAME },
    client: { caPem: s.caPem, certPem: s.clientCertPem, keyPem: s.clientKeyPem, serverName: HA_SERVER_NAME },
  };
}

/** The stored certificates, or undefined when no node has been active yet. */
export async function loadHaTls(store: Store): Promise<HaTls | undefined> {
  const raw = await store.get(KEY);
  return raw === undefined ? undefined : materialOf(JSON.parse(raw.toString('utf8')) as Stored);
}

/** The stored certificates, made and stored first when there are none. Only the active node writes. */
export async function ensureHaTls(store: Store, now: number): Promise<HaTls> {
  const found = await loadHaTls(store);
  if (found !== undefined) return found;
  const ca = await createCa({ clusterId: 'ha', now, ttlDays: TTL_DAYS });
  const server = await issueLeaf(ca, { name: HA_SERVER_NAME, usage: 'server', ttlDays: TTL_DAYS, now });
  const client = await issueLeaf(ca, { name: CLIENT_NAME, usage: 'client', ttlDays: TTL_DAYS, now });
  const stored: Stored = { caPem: ca.certPem, serverCertPem: server.certPem, serverKeyPem: server.keyPem, clientCertPem: client.certPem, clientKeyPem: client.keyPem };
  await store.commit([{ type: 'put', key: KEY, value: Buffer.from(JSON.stringify(stored)) }]);
  return materialOf(stored);
}
