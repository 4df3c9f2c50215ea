/**
 * The replication channel on gRPC: the primary serves a PrimaryService, secondaries connect with a
 * PrimaryClient; both ends authenticate with certificates from the cluster's replication CA.
 *
 *   const server = await serveReplication({ address: '127.0.0.1:0', tls: serverTls, service });
 *   const client = connectPrimary({ address: server.address, tls: clientTls });
 *   try { await client.bootstrap(req) } catch (e) { if (e instanceof ChannelError) e.reason ... }
 */
export { serveReplication, type ServeOptions } from './server.js';
export { connectPrimary, type ConnectOptions } from './client.js';
export { ChannelError, ChannelReason } from './status.js';
export { MalformedMessage } from './codec.js';
