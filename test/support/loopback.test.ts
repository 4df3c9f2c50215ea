/** The replication channel contract (channel-contract.ts) over the in-process loopback network the replication tests use. */
import { runChannelContract } from './channel-contract.js';
import { loopbackNetwork } from './loopback.js';

runChannelContract('loopback', async (service, pki) => {
  const net = loopbackNetwork();
  const address = 'loop:primary';
  const server = await net.serve({ kind: 'dr', address, tls: pki.serverTls, service });
  return {
    client: (id) => net.connect({ address, tls: pki.clientTls(id) }),
    foreignClient: (foreign) => net.connect({ address, tls: foreign.clientTls('s1') }),
    disconnect: (id) => server.disconnect(id),
    stop: () => server.close(),
  };
});
