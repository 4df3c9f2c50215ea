/**
 * The active role's order with hand-written fakes of the ports it declares (ports.ts): starting
 * holds the door before anything binds the cluster port, reloads before opening writes, opens
 * writes under a new epoch before the caches and replication, and opens the read leases and
 * serves the HA service last; stopping refuses writes and revokes the read leases before
 * replication stops, and gives the port back after. A relayed
 * request runs through the real HTTP executor, which renders the role's refusal.
 */
import { pino } from 'pino';
import { NoActiveNode, RelayFailed, StorageFailed, Unavailable } from '../core/errors.js';
import { startHttp, type HttpServer } from '../http/server.js';
import { publicServices } from '../http/testing/public-services.js';
import type { Followed, ReloadResult } from '../storage/engine.js';
import type { Op, Store } from '../storage/store.js';
import { ActiveRole } from './active-role.js';
import type { HaView } from './controller.js';
import type { HaClusterListener, HaEngine, HaReplication, HaVault, RawRequest, RelayExecutor } from './ports.js';
import { StandbyRelay } from './standby.js';
import { loadHaTls } from './tls.js';

const log = pino({ level: 'silent' });

/** A store over a map (the vault's store port). */
class MapStore implements Store {
  readonly data = new Map<string, Buffer>();
  async get(key: string): Promise<Buffer | undefined> {
    return this.data.get(key);
  }
  async list(): Promise<string[]> {
    return [...this.data.keys()];
  }
  async commit(ops: readonly Op[]): Promise<void> {
    for (const op of ops) {
      if (op.type === 'put') this.data.set(op.key, op.value);
      else this.data.delete(op.key);
    }
  }
}

interface Fixture {
  readonly role: ActiveRole;
  readonly calls: string[];
  readonly store: MapStore;
  mode: HaView['mode'];
  active: boolean;
  failReplicationStop: boolean;
  listener: HaClusterListener | undefined;
  execute: RelayExecutor | undefined;
}

function fixture(): Fixture {
  const calls: string[] = [];
  const store = new MapStore();
  let epoch = 4;
  const engine: HaEngine = {
    reload: async (): Promise<ReloadResult> => {
      calls.push('engine.reload');
      return { from: 'full load' };
    },
    follow: async () => undefined,
    followReads: async (): Promise<Followed> => ({ entries: 0, known: true, keys: [] }),
    applyPushed: () => undefined,
    standby: (refusal) => calls.push(refusal === undefined ? 'engine.writes' : 'engine.refuses'),
    epoch: () => epoch,
    setEpoch: async (e) => {
      calls.push(`engine.epoch ${e}`);
      epoch = e;
    },
    onFailure: () => () => undefined,
    failure: (): StorageFailed | undefined => undefined,
  };
  const vault: HaVault = {
    store: () => store,
    reopen: async () => void calls.push('vault.reopen'),
    reload: async () => void calls.push('vault.reload'),
  };
  const f: Fixture = {
    calls,
    store,
    mode: 'active',
    active: true,
    failReplicationStop: false,
    listener: undefined,
    execute: undefined,
    role: undefined as unknown as ActiveRole,
  };
  const replication: HaReplication = {
    start: async () => void calls.push('replication.start'),
    stop: async () => {
      calls.push('replication.stop');
      if (f.failReplicationStop) throw new Unavailable('stop failed');
    },
  };
  f.listener = {
    serveHa: async (r) => {
      calls.push(`serveHa ${r.tls.serverName} ${Object.keys(r.handlers).join(',')}`);
      return { close: async () => void calls.push('serveHa.close') };
    },
  };
  (f as { role: ActiveRole }).role = new ActiveRole({
    ha: () => ({ view: () => ({ mode: f.mode }) as HaView, isActive: () => f.active }),
    door: {
      hold: async () => void calls.push('door.hold'),
      resume: () => void calls.push('door.resume'),
    },
    leases: {
      open: () => void calls.push('leases.open'),
      revokeAll: async () => void calls.push('leases.revoke'),
      accept: () => void calls.push('leases.accept'),
    },
    engine,
    vault,
    replication,
    clusterListener: () => f.listener,
    execute: () => f.execute,
    log,
    now: Date.now,
  });
  return f;
}

describe('the active role', () => {
  it('starts in order: door, reload, writes, epoch, caches, certificates, replication, read leases, HA service', async () => {
    const f = fixture();
    await f.role.start();
    expect(f.calls).toEqual(['door.hold', 'engine.reload', 'engine.writes', 'engine.epoch 5', 'vault.reopen', 'replication.start', 'leases.open', 'serveHa ha.tessera.cluster forward,readLease']);
    // The certificates standbys relay with were made before forwarding was served.
    expect(await loadHaTls(f.store)).toBeDefined();
  });

  it('refuses to finish starting without a cluster listener (nothing is served)', async () => {
    const f = fixture();
    f.listener = undefined;
    await expect(f.role.start()).rejects.toBeInstanceOf(Unavailable);
    expect(f.calls.at(-1)).toBe('replication.start');
  });

  it('stops in order: writes refused, read leases revoked, replication stopped, door resumed; a sealed node is not made a standby', async () => {
    const f = fixture();
    await f.role.start();
    f.calls.length = 0;
    f.mode = 'standby';
    await f.role.stop();
    expect(f.calls).toEqual(['engine.refuses', 'leases.revoke', 'replication.stop', 'door.resume']);

    f.calls.length = 0;
    f.mode = 'sealed';
    await f.role.stop();
    expect(f.calls).toEqual(['leases.revoke', 'replication.stop', 'door.resume']);
  });

  it('stops without throwing when replication fails to stop, and still gives the port back', async () => {
    const f = fixture();
    f.failReplicationStop = true;
    f.mode = 'cooldown';
    await expect(f.role.stop()).resolves.toBeUndefined();
    expect(f.calls).toEqual(['engine.refuses', 'leases.revoke', 'replication.stop', 'door.resume']);
  });

  it('makes the HA certificates again and serves them when a wipe took them, only while active and serving', async () => {
    const f = fixture();
    f.role.keepTls();
    // Not serving yet: nothing to keep.
    await new Promise((resolve) => setImmediate(resolve));
    expect(f.calls).toEqual([]);
    await f.role.start();
    const before = (await loadHaTls(f.store))?.server.caPem;
    f.store.data.clear();
    f.calls.length = 0;
    f.role.keepTls();
    for (let i = 0; i < 200 && f.calls.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(f.calls).toEqual(['serveHa ha.tessera.cluster forward,readLease']);
    const after = (await loadHaTls(f.store))?.server.caPem;
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
  });
});

describe('the relay\'s refusals, as the HTTP error table renders them', () => {
  let http: HttpServer;
  let relayTarget: ReturnType<ConstructorParameters<typeof StandbyRelay>[0]['relayTarget']>;
  const relay = new StandbyRelay({
    relayTarget: () => relayTarget,
    findLeader: async () => undefined,
    waitForLeaderMs: 0,
    // No node of this cluster has been active yet: no certificates to relay with.
    loadTls: async () => undefined,
    connect: () => {
      throw new Error('never connects without certificates');
    },
    verifiedApiAddr: async () => undefined,
    servesReads: () => false,
    current: async () => {
      throw new Error('the database is down');
    },
  });
  const request: RawRequest = { method: 'GET', url: '/v1/secret/data/x', headers: {}, body: undefined, remoteAddress: '127.0.0.1' };

  beforeAll(async () => {
    http = await startHttp({ services: publicServices, routes: [], address: '127.0.0.1:0', logger: log, standby: relay });
  });
  afterAll(async () => {
    relay.close();
    await http.close();
  });

  /** status, content type and body of `path` on the listener. */
  async function get(path: string): Promise<[number, string | null, unknown]> {
    const res = await fetch(`${http.url}${path}`);
    return [res.status, res.headers.get('content-type'), await res.json()];
  }

  it('no active node known: 503 in Vault\'s words', async () => {
    relayTarget = { leader: undefined };
    await expect(relay.divert(request, () => false)).rejects.toBeInstanceOf(NoActiveNode);
    expect(await get('/v1/secret/data/x')).toEqual([503, 'application/json', { errors: ['local node not active but active cluster node not found'] }]);
  });

  it('a leader known before any node made the certificates: 503 saying so', async () => {
    relayTarget = { leader: { apiAddr: 'http://127.0.0.1:1', clusterAddr: '127.0.0.1:1' } };
    expect(await get('/v1/secret/data/x')).toEqual([503, 'application/json', { errors: ['local node not active but active cluster node not found: no node of this cluster has been active yet'] }]);
  });

  it('a token-checked local path on a standby that cannot tell it is current: 503, nothing done', async () => {
    relayTarget = { leader: undefined };
    expect(await get('/v1/sys/metrics')).toEqual([503, 'application/json', { errors: ['this standby could not bring itself up to the shared database (the database is down); nothing was done: retry'] }]);
  });

  it('a relayed request reaching a node that is no longer active: 503 from the executor, nothing run', async () => {
    const f = fixture();
    f.execute = http.execute;
    f.active = false;
    const reply = await f.role.execute({ method: 'GET', url: '/v1/sys/anything', headers: {}, body: undefined, remoteAddress: 'ha-standby' });
    expect(reply.status).toBe(503);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(JSON.parse(reply.body.toString('utf8'))).toEqual({ errors: ['this node is no longer the active node: nothing was run (retry through any node)'] });
    // Without an executor handed over there is nothing to render with: the typed error itself.
    f.execute = undefined;
    await expect(f.role.execute(request)).rejects.toBeInstanceOf(RelayFailed);
  });
});
