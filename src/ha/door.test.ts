import pino from 'pino';
import { ChannelError, NotActiveNode, type PrimaryService } from '../replication/index.js';
import { connectPrimary, createClusterServer, serveReplication } from '../transport/grpc/index.js';
import { makePki, type Pki } from '../transport/grpc/testing/fixtures.js';
import { freeClusterAddr } from '../node/free-port.js';
import { HaDoor } from './door.js';

const log = pino({ level: 'silent' });

const refusing = (active: string): PrimaryService => {
  const refuse = async (): Promise<never> => {
    throw new NotActiveNode(active);
  };
  return {
    authorize: () => undefined, ping: refuse, bootstrap: refuse, heartbeat: refuse, openSnapshot: refuse, closeSnapshot: refuse, pageHashes: refuse,
    subpageHashes: refuse, leaves: refuse, fetchValues: refuse, forward: refuse, streamWal: (_p, _r, sink) => sink.fail(new NotActiveNode(active)),
  };
};

describe('the HA standby door on the cluster port', () => {
  let pki: Pki;
  beforeAll(async () => {
    pki = await makePki(['s1']);
  });

  /** What a ping to `address` ends with: the address a standby named, 'answered', or the failure's reason. */
  async function ping(address: string): Promise<string> {
    const client = connectPrimary({ address, tls: pki.clientTls('s1') });
    try {
      await client.ping('s1', 2_000);
      return 'answered';
    } catch (e) {
      if (e instanceof NotActiveNode) return `named ${e.activeClusterAddr ?? ''}`;
      return e instanceof ChannelError ? e.reason : String(e);
    } finally {
      client.close();
    }
  }

  it('answers while wanted, gives the port back to the active role on hold, and takes it again on resume', async () => {
    const address = await freeClusterAddr('127.0.0.1:0');
    let version = 'v1';
    const door = new HaDoor({
      address,
      log,
      listen: (a) => createClusterServer({ address: a, log, closeGraceMs: 200 }),
      refreshMs: 100,
      registrations: async () => [{ kind: 'dr', tls: pki.serverTls, service: refusing('10.0.0.1:8201'), version }],
    });
    try {
      door.want(true);
      await door.hold();
      expect(door.open).toBe(false);
      door.resume();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(door.open).toBe(true);
      expect(await ping(address)).toBe('named 10.0.0.1:8201');

      // The active role starts: the door closes first, so the role binds the same port.
      await door.hold();
      const active = await serveReplication({ address, tls: pki.serverTls, service: refusing('self') });
      expect(await ping(address)).toBe('named self');
      await active.close();
      // The role stopped: the door answers again, re-served when the record changed.
      version = 'v2';
      door.resume();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await ping(address)).toBe('named 10.0.0.1:8201');

      // Not wanted (sealed, or active): closed.
      door.want(false);
      await door.hold();
      door.resume();
      expect(door.open).toBe(false);
      expect(await ping(address)).toBe('unavailable');
    } finally {
      await door.close();
    }
  });
});
