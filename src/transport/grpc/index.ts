/**
 * The replication channel on gRPC: the primary serves a PrimaryService, secondaries connect with a
 * PrimaryClient; both ends authenticate with certificates from the cluster's replication CA.
 *
 *   const cluster = createClusterServer({ address: '0.0.0.0:8201' });   // one port, every kind
 *   const dr = await cluster.serve({ kind: 'dr', tls: serverTls, service }); // SNI picks the kind
 *   const server = await serveReplication({ address: '127.0.0.1:0', tls: serverTls, service }); // one kind
 *   const client = connectPrimary({ address: server.address, tls: clientTls });
 *   try { await client.bootstrap(req) } catch (e) { if (e instanceof ChannelError) e.reason ... }
 */
export { createClusterServer, serveReplication, type ClusterServer, type ClusterServerOptions, type KindRegistration, type ServeOptions } from './server.js';
export { SniServerCredentials } from './sni-credentials.js';
export { connectPrimary, type ConnectOptions } from './client.js';
export { connectHa, type HaClient, type HaHttpReply, type HaHttpRequest } from './ha.js';
export type { HaHandlers, HaRegistration, HaServing } from './ha-service.js';
export { ChannelError, ChannelReason } from '../../replication/index.js';
export { MalformedMessage } from './codec.js';
