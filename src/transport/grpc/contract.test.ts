/** The replication channel contract (test/support/channel-contract.ts) over real gRPC with mTLS on 127.0.0.1. */
import { runChannelContract } from '../../../test/support/channel-contract.js';
import { connectPrimary, serveReplication } from './index.js';

runChannelContract('gRPC over mTLS', async (service, pki) => {
  const server = await serveReplication({ address: '127.0.0.1:0', tls: pki.serverTls, service, closeGraceMs: 200 });
  return {
    client: (id) => connectPrimary({ address: server.address, tls: pki.clientTls(id) }),
    foreignClient: (foreign) => connectPrimary({ address: server.address, tls: foreign.clientTls('s1') }),
    disconnect: (id) => server.disconnect(id),
    stop: () => server.close(),
  };
});
