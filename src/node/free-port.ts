/**
 * A concrete cluster address for a node that must name it before it listens (HA: the lock row
 * carries it): `host:0` becomes `host:<a port free now>`; any other address is kept.
 *
 *   await freeClusterAddr('127.0.0.1:0')   // '127.0.0.1:41873'
 */
import net from 'node:net';

export async function freeClusterAddr(address: string): Promise<string> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at);
  if (address.slice(at + 1) !== '0') return address;
  const port = await new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, host.replace(/^\[|\]$/g, ''), () => {
      const bound = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(bound));
    });
  });
  return `${host}:${port}`;
}
