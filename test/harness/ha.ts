/**
 * The one HA topology of the tests and scripts: N nodes (3 unless given) on one PostgreSQL
 * database with `ha_enabled`, the first initialised, every one unsealed, one active and the
 * others standbys once it resolves. Process nodes by default, each on fixed api and cluster
 * ports of its own (free ones, or the caller's), so a node restarted on its home keeps its
 * addresses; in-process nodes (`inProcess: true`) behind the same shape for the HTTP surface.
 * The PostgreSQL is the caller's (`postgres`, e.g. usePostgres()) or a private one that `close()`
 * stops; `close()` runs in the harness's cleanup too.
 *
 *   const pg = usePostgres();
 *   const c = await startHaCluster(h, { postgres: pg(), database: 'ha_faults', mountKv2: true });
 *   const a = await c.active();                   // the one node whose sys/leader says is_self
 *   const [s] = await c.standbys();
 *   await a.kill('SIGKILL'); await c.active({ not: a }); await c.restart(a);   // back as a standby
 *   a.pause(); ...; a.resume();                    // SIGSTOP / SIGCONT
 *   const next = await c.stepDown();               // PUT sys/step-down on the active node; another is active
 *   await c.epoch();                               // the lock row's epoch
 *   const ip = await startHaCluster(h, { inProcess: true, nodes: 2 });   // in this jest process
 *   startHaCluster(h, { inProcess: true, redundancyZone: (i) => (i === 0 ? 'zone-a' : undefined) });
 *   startHaCluster(h, { connectionUrl: (url) => withPassword(url) });   // the nodes' URL; c.url stays the database's
 */
import { freePorts } from './dr.js';
import { eventually } from './eventually.js';
import { mountKv2, unsealWith, initAndUnseal, type Harness, type InProcessNode, type InProcessOptions, type StartedNode, type StartOptions } from './harness.js';
import { rawRequest } from './http.js';
import { sqlRows, startPostgres, type TestPostgres } from '../support/postgres.js';

/** A node's fixed addresses in a process topology. */
export interface HaPorts {
  readonly apiPort: number;
  readonly clusterPort: number;
}

interface HaSpecBase {
  /** How many nodes; 3 unless given. */
  readonly nodes?: number;
  /** The PostgreSQL to create the cluster's database on; a private one, stopped by `close()`, unless given. */
  readonly postgres?: TestPostgres;
  /** The database's name (letters, digits, _); 'ha' unless given. One cluster per database. */
  readonly database?: string;
  /** Mount `secret/` as KV v2 through the active node. */
  readonly mountKv2?: boolean;
  /** 'first': only the initialised node is unsealed (it is the active node); the test unseals the rest. */
  readonly unseal?: 'all' | 'first';
  /** The nodes' connection URL made from the database's (e.g. with a password in it); `url` stays the database's. */
  readonly connectionUrl?: (url: string) => string;
}

export interface HaSpec extends HaSpecBase {
  readonly inProcess?: false;
  /** `ha_lease_ttl`; "2s" unless given. */
  readonly leaseTtl?: string;
  /** The init's sharing; one share, threshold one unless given. */
  readonly init?: { readonly shares?: number; readonly threshold?: number };
  /**
   * Start options of node `i` (its fixed ports given; postgresql is the builder's), or the same
   * options for every node. Ports in the options override the free ones (a script's fixed layout).
   */
  readonly node?: StartOptions | ((i: number, ports: HaPorts) => StartOptions | Promise<StartOptions>);
}

export interface InProcessHaSpec extends HaSpecBase {
  readonly inProcess: true;
  /** Options of node `i` (postgresql and initialize are the builder's), e.g. a fixed `clusterAddr`. */
  readonly node?: (i: number) => InProcessOptions;
  /** The lease (ms); the node's default (2 s) unless given. In-process nodes share jest's event loop. */
  readonly leaseTtlMs?: number;
  /** The `redundancy_zone` of node `i`; none unless given. */
  readonly redundancyZone?: (i: number) => string | undefined;
}

/** A process node of an HA topology: its index, fixed cluster address, SIGSTOP and SIGCONT. */
export interface HaNode extends StartedNode {
  readonly index: number;
  /** 127.0.0.1:<clusterPort>. */
  readonly clusterAddr: string;
  /** SIGSTOP: the node stops answering; `active()` leaves it out until `resume()`. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** True between `pause()` and `resume()`. */
  paused(): boolean;
}

/** An in-process node of an HA topology. */
export type InProcessHaNode = InProcessNode & { readonly index: number };

export interface ActiveOptions<N> {
  /** The nodes to ask; every running, unpaused node unless given. */
  readonly among?: readonly N[];
  /** Waits until the active node is another than this one (by address: a takeover). */
  readonly not?: N;
  /** Unless false, every other node that answers must name the active one as its leader (a sealed node names none). */
  readonly agreed?: boolean;
  readonly timeoutMs?: number;
}

export interface HaCluster<N extends HaNode | InProcessHaNode> {
  /** The nodes by index; `restart` puts the new handle in its node's place. */
  readonly nodes: N[];
  /** The database's URL (the WAL, the lock row). */
  readonly url: string;
  readonly postgres: TestPostgres;
  readonly rootToken: string;
  readonly unsealKeys: readonly string[];
  /**
   * Waits until exactly one of the nodes asked says is_self in sys/leader (a node that does not
   * answer within a second counts as not active) and every other that answers names it; resolves with it.
   */
  active(opts?: ActiveOptions<N>): Promise<N>;
  /** The nodes other than the active one (once there is one), running ones only. */
  standbys(): Promise<N[]>;
  /** PUT sys/step-down on the active node; resolves with the next active node (another one). */
  stepDown(): Promise<N>;
  /**
   * Starts node `n` again on its home (and, for process nodes, its ports) once it is stopped or
   * killed (SIGKILLs it first when it still runs), and unseals it; resolves with the new handle.
   */
  restart(n: N): Promise<N>;
  /** The lock row's epoch (0 before any node took the lease). */
  epoch(): Promise<number>;
  /** Stops every node, then a private PostgreSQL. Idempotent. */
  close(): Promise<void>;
}

export function startHaCluster(h: Harness, spec: InProcessHaSpec): Promise<HaCluster<InProcessHaNode>>;
export function startHaCluster(h: Harness, spec?: HaSpec): Promise<HaCluster<HaNode>>;
export async function startHaCluster(h: Harness, spec: HaSpec | InProcessHaSpec = {}): Promise<HaCluster<HaNode> | HaCluster<InProcessHaNode>> {
  const count = spec.nodes ?? 3;
  const own = spec.postgres === undefined ? await startPostgres() : undefined;
  const postgres = spec.postgres ?? own!;
  const url = spec.database === undefined && own !== undefined ? postgres.url : await postgres.createDatabase(spec.database ?? 'ha');
  let closed = false;
  const stops: Array<() => Promise<unknown>> = [];
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await Promise.all(stops.map((s) => s().catch(() => undefined)));
    await own?.stop();
  };
  h.onCleanup(close);
  try {
    return spec.inProcess === true ? await inProcessCluster(h, spec, count, postgres, url, stops, close) : await processCluster(h, spec, count, postgres, url, stops, close);
  } catch (e) {
    await close();
    throw e;
  }
}

type Stops = Array<() => Promise<unknown>>;

async function processCluster(h: Harness, spec: HaSpec, count: number, postgres: TestPostgres, url: string, stops: Stops, close: () => Promise<void>): Promise<HaCluster<HaNode>> {
  const free = await freePorts(2 * count);
  const postgresql = { connectionUrl: spec.connectionUrl?.(url) ?? url, haEnabled: true, haLeaseTtl: spec.leaseTtl ?? '2s' };
  const options: StartOptions[] = [];
  for (let i = 0; i < count; i++) {
    const ports = { apiPort: free[2 * i]!, clusterPort: free[2 * i + 1]! };
    const given = typeof spec.node === 'function' ? await spec.node(i, ports) : (spec.node ?? {});
    options.push({ apiPort: ports.apiPort, clusterAddr: `127.0.0.1:${ports.clusterPort}`, readyTimeoutMs: 60_000, ...given, postgresql });
  }
  const paused = new Set<number>();
  const wrap = (n: StartedNode, i: number): HaNode =>
    Object.assign(n, {
      index: i,
      clusterAddr: options[i]!.clusterAddr!,
      pause: () => void (paused.add(i), n.proc.kill('SIGSTOP')),
      resume: () => void (paused.delete(i), n.proc.kill('SIGCONT')),
      paused: () => paused.has(i),
    });
  const boot = async (i: number, dataDir?: string): Promise<HaNode> => wrap(await h.startNode({ ...options[i]!, ...(dataDir !== undefined ? { dataDir } : {}) }), i);
  stops.push(async () => {
    for (const n of nodes) if (n.running() && n.paused()) n.resume();
    await Promise.all(nodes.map((n) => n.kill('SIGKILL')));
  });
  const nodes: HaNode[] = await Promise.all(options.map((_, i) => boot(i)));
  const init = await initAndUnseal(nodes[0]!.apiAddr, spec.init ?? { shares: 1, threshold: 1 });
  const creds = { rootToken: init.rootToken, unsealKeys: [...init.keys] };
  for (const n of nodes) Object.assign(n, creds);
  if (spec.unseal !== 'first') for (const n of nodes.slice(1)) await unsealWith(n.apiAddr, creds.unsealKeys);
  const restart = async (n: HaNode): Promise<HaNode> => {
    const i = n.index;
    if (n.paused()) n.resume();
    await n.kill('SIGKILL');
    const again = Object.assign(await boot(i, n.dataDir), creds);
    nodes[i] = again;
    await unsealWith(again.apiAddr, creds.unsealKeys);
    return again;
  };
  const asked = () => nodes.filter((n) => n.running() && !n.paused());
  return finish({ nodes, url, postgres, ...creds, restart, close, asked }, spec);
}

async function inProcessCluster(h: Harness, spec: InProcessHaSpec, count: number, postgres: TestPostgres, url: string, stops: Stops, close: () => Promise<void>): Promise<HaCluster<InProcessHaNode>> {
  const postgresql = { connectionUrl: spec.connectionUrl?.(url) ?? url, haEnabled: true, ...(spec.leaseTtlMs !== undefined ? { haLeaseTtlMs: spec.leaseTtlMs } : {}) };
  const stopped = new Set<InProcessHaNode>();
  const boot = async (i: number, dir?: string): Promise<InProcessHaNode> => {
    const zone = spec.redundancyZone?.(i);
    const n = await h.startNode({ ...spec.node?.(i), inProcess: true, postgresql: zone === undefined ? postgresql : { ...postgresql, redundancyZone: zone }, ...(i === 0 && dir === undefined ? {} : { initialize: false }), ...(dir !== undefined ? { dir } : {}) });
    // `stop()` keeps the home, so that `restart` starts the node on it again.
    const stop = n.stop.bind(n);
    return Object.assign(n, { index: i, stop: async () => (stopped.add(n as InProcessHaNode), stop({ keepDir: true })) }) as InProcessHaNode;
  };
  stops.push(async () => {
    for (const n of nodes) await n.stop();
  });
  const first = await boot(0);
  const nodes: InProcessHaNode[] = [first, ...(await Promise.all(Array.from({ length: count - 1 }, (_, i) => boot(i + 1))))];
  const creds = { rootToken: first.rootToken, unsealKeys: [...first.unsealKeys] };
  for (const n of nodes) Object.assign(n, creds);
  if (spec.unseal !== 'first') for (const n of nodes.slice(1)) await unsealWith(n.apiAddr, creds.unsealKeys);
  const restart = async (n: InProcessHaNode): Promise<InProcessHaNode> => {
    await n.stop();
    const again = Object.assign(await boot(n.index, n.dataDir), creds);
    nodes[n.index] = again;
    await unsealWith(again.apiAddr, creds.unsealKeys);
    return again;
  };
  const asked = () => nodes.filter((n) => !stopped.has(n));
  return finish({ nodes, url, postgres, ...creds, restart, close, asked }, spec);
}

interface Parts<N extends HaNode | InProcessHaNode> {
  readonly nodes: N[];
  readonly url: string;
  readonly postgres: TestPostgres;
  readonly rootToken: string;
  readonly unsealKeys: readonly string[];
  restart(n: N): Promise<N>;
  close(): Promise<void>;
  /** The nodes `active()` asks by default: those that can answer. */
  asked(): N[];
}

async function finish<N extends HaNode | InProcessHaNode>(p: Parts<N>, spec: HaSpecBase): Promise<HaCluster<N>> {
  const active = (opts: ActiveOptions<N> = {}): Promise<N> =>
    eventually(
      async () => {
        const among = opts.among ?? p.asked();
        const views = await Promise.all(among.map((n) => leaderOf(n.apiAddr)));
        const self = among.filter((_, i) => views[i]?.is_self === true);
        if (self.length !== 1) throw new Error(`${self.length} nodes say they are active: ${JSON.stringify(views)}`);
        const a = self[0]!;
        if (a.apiAddr === opts.not?.apiAddr) throw new Error(`${a.apiAddr} is still the active node`);
        const others = views.filter((v, i) => among[i] !== a && v !== undefined && v.leader_address !== a.apiAddr);
        if (opts.agreed !== false && others.length > 0) throw new Error(`not every standby names ${a.apiAddr}: ${JSON.stringify(views)}`);
        return a;
      },
      { timeoutMs: opts.timeoutMs ?? 30_000, intervalMs: 50 },
    );
  const c: HaCluster<N> = {
    nodes: p.nodes,
    url: p.url,
    postgres: p.postgres,
    rootToken: p.rootToken,
    unsealKeys: p.unsealKeys,
    active,
    async standbys() {
      const a = await active();
      return p.asked().filter((n) => n !== a);
    },
    async stepDown() {
      const a = await active();
      const r = await a.vault(p.rootToken).put('sys/step-down', {});
      if (r.status !== 204) throw new Error(`sys/step-down answered ${r.status}: ${r.text}`);
      return active({ not: a });
    },
    restart: p.restart,
    epoch: async () => Number((await sqlRows<{ epoch: string }>(p.url, "SELECT epoch::text AS epoch FROM vault_ha_locks WHERE ha_key = 'leader'"))[0]?.epoch ?? 0),
    close: p.close,
  };
  // One active node that every standby names (with `unseal: 'first'`, the one unsealed node).
  const a = await active(spec.unseal === 'first' ? { among: [p.nodes[0]!] } : {});
  if (spec.mountKv2 === true) await mountKv2(a.apiAddr, p.rootToken);
  return c;
}

/** sys/leader of `apiAddr` (no token); undefined when it does not answer 200 within a second. */
async function leaderOf(apiAddr: string): Promise<{ is_self?: boolean; leader_address?: string } | undefined> {
  const r = await rawRequest(apiAddr, { method: 'GET', path: '/v1/sys/leader', timeoutMs: 1000 }).catch(() => undefined);
  if (r?.status !== 200) return undefined;
  try {
    return JSON.parse(r.text) as { is_self?: boolean; leader_address?: string };
  } catch {
    return undefined;
  }
}
