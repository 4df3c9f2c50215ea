/**
 * The one topology builder, for tests and scripts: a primary (initialised, optionally with
 * `secret/` as KV v2), each kind enabled on it, and every secondary started, activated under its
 * id (its paths filter set, for a performance one) and waited on until in sync (test/harness/dr.ts
 * does each step). Nodes are process nodes unless `node: { inProcess: true }`. Each node can take
 * start options of its own (fixed ports, a log file, a data dir, a `replication` block, Node.js
 * flags), the primary's cluster address can sit behind a TCP proxy (test/support/tcp-proxy.ts)
 * that the secondaries are told instead, and hooks run before replication is enabled and before
 * the secondaries are activated.
 *
 *   const { primary, dr: [east] } = await startCluster(h, { mountKv2: true, dr: ['east'] });
 *   await drOperationToken(east.apiAddr, primary.unsealKeys.slice(0, 2));
 *   const c = await startCluster(h, { node: { inProcess: true }, performance: ['perf-east'] });
 *   const { proxy } = await startCluster(h, {
 *     primary: { replication: { walMaxEntries: 50 } }, proxy: true,
 *     performance: [{ id: 'far', filter: { mode: 'allow', paths: ['alpha'] } }],
 *     beforeEnable: async ({ primary }) => { await primary.vault().post('sys/mounts/alpha', { type: 'kv' }); },
 *   });
 *   proxy!.cut();                                               // closed by the harness's cleanup
 *   await joinSecondary(primary, node, 'west', 'performance');   // a node the test prepared itself
 */
import { activateSecondary, enablePrimary, freePort, generateRoot, replStatus, secondaryToken, setPathsFilter, waitInSync, type Kind } from './dr.js';
import { mountKv2, type Harness, type InProcessNode, type InProcessOptions, type NodeHandle, type StartedNode, type StartOptions } from './harness.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

/** A performance paths filter, as `setPathsFilter` takes it. */
export interface PathsFilter {
  readonly mode: 'allow' | 'deny';
  readonly paths: readonly string[];
}

/** One secondary: its id, and optionally start options of its own and (performance) a paths filter. */
export interface SecondarySpec<O> {
  readonly id: string;
  /** Merged over the spec's `node` for this secondary. */
  readonly node?: O;
  /** Performance secondaries: set on the primary right after the activation, before the sync wait. */
  readonly filter?: PathsFilter;
}

/** What the hooks see: the primary (initialised) and the secondaries (started, initialised, not yet activated). */
export interface ClusterSoFar<N extends NodeHandle> {
  readonly primary: N & { readonly rootToken: string };
  readonly dr: ReadonlyArray<N & { readonly rootToken: string }>;
  readonly performance: ReadonlyArray<N & { readonly rootToken: string }>;
  /** The proxy in front of the primary's cluster address, when asked for. */
  readonly proxy: TcpProxy | undefined;
}

export interface ClusterSpec<O, N extends NodeHandle = NodeHandle> {
  /** Start options of every node; `primary` (and a secondary's own `node`) is merged over them. */
  readonly node?: O;
  readonly primary?: O;
  /** Process primaries: the init (3 shares, threshold 2 unless given); secondaries get one share. */
  readonly primaryInit?: { readonly shares?: number; readonly threshold?: number };
  /** Mount `secret/` as KV v2 on the primary before replication is enabled. */
  readonly mountKv2?: boolean;
  /** The DR secondaries (ids, or specs), activated in order. */
  readonly dr?: ReadonlyArray<string | SecondarySpec<O>>;
  /** The performance secondaries (ids, or specs), activated in order. */
  readonly performance?: ReadonlyArray<string | SecondarySpec<O>>;
  /**
   * A TCP proxy in front of the primary's cluster address, given to `primary/enable` as the
   * address secondaries are told (so every cluster call crosses it). The primary's cluster port is
   * fixed for it (a free one unless `primary.clusterAddr` gives it). The harness closes it.
   */
  readonly proxy?: boolean;
  /** Runs once every node is up and initialised (after `mountKv2`), before replication is enabled. */
  readonly beforeEnable?: (c: ClusterSoFar<N>) => Promise<void>;
  /** Runs once each kind with secondaries is enabled on the primary, before the first activation. */
  readonly beforeActivate?: (c: ClusterSoFar<N>) => Promise<void>;
}

export interface Cluster<N extends NodeHandle> {
  readonly primary: N & { readonly rootToken: string };
  readonly dr: Array<N & { readonly rootToken: string }>;
  readonly performance: Array<N & { readonly rootToken: string }>;
  /** The proxy in front of the primary's cluster address (`proxy: true`); closed by the harness's cleanup. */
  readonly proxy: TcpProxy | undefined;
}

type InProcessSpec = ClusterSpec<InProcessOptions, InProcessNode> & { readonly node: InProcessOptions & { readonly inProcess: true } };

export function startCluster(h: Harness, spec: InProcessSpec): Promise<Cluster<InProcessNode>>;
export function startCluster(h: Harness, spec?: ClusterSpec<StartOptions, StartedNode>): Promise<Cluster<StartedNode>>;
export async function startCluster(h: Harness, spec: ClusterSpec<StartOptions, StartedNode> | InProcessSpec = {}): Promise<Cluster<NodeHandle>> {
  const base = spec.node ?? {};
  const start = (o: object, init: StartOptions['init']): Promise<NodeHandle> =>
    base.inProcess === true ? h.startNode({ ...base, ...o, inProcess: true }) : h.startNode({ ...(base as StartOptions), ...o, init });
  const specs = (xs: ReadonlyArray<string | SecondarySpec<object>> | undefined): Array<SecondarySpec<object>> => (xs ?? []).map((x) => (typeof x === 'string' ? { id: x } : x));
  const kinds: Array<[Kind, Array<SecondarySpec<object>>]> = [
    ['dr', specs(spec.dr)],
    ['performance', specs(spec.performance)],
  ];
  let primaryOpts: { clusterAddr?: string } = spec.primary ?? {};
  if (spec.proxy === true && (primaryOpts.clusterAddr ?? '127.0.0.1:0').endsWith(':0')) primaryOpts = { ...primaryOpts, clusterAddr: `127.0.0.1:${await freePort()}` };
  const [primary, ...secondaries] = await Promise.all([
    start(primaryOpts, spec.primaryInit ?? { shares: 3, threshold: 2 }),
    ...kinds.flatMap(([, ss]) => ss.map((s) => start(s.node ?? {}, true))),
  ]);
  let proxy: TcpProxy | undefined;
  if (spec.proxy === true) {
    const target = primaryOpts.clusterAddr!;
    proxy = await startTcpProxy(target);
    h.onCleanup(() => proxy!.close());
  }
  if (spec.mountKv2 === true) await mountKv2(primary!.apiAddr, primary!.rootToken!);
  const byKind = { dr: secondaries.slice(0, kinds[0]![1].length), performance: secondaries.slice(kinds[0]![1].length) };
  const soFar = { primary: primary!, dr: byKind.dr, performance: byKind.performance, proxy } as ClusterSoFar<NodeHandle>;
  // Each overload's hooks take its own node type; the nodes here are of that type.
  type Hook = ((c: ClusterSoFar<NodeHandle>) => Promise<void>) | undefined;
  await (spec.beforeEnable as Hook)?.(soFar);
  for (const [kind, ss] of kinds) if (ss.length > 0) await enableOnce(primary!, kind, proxy?.address ?? '');
  await (spec.beforeActivate as Hook)?.(soFar);
  for (const [kind, ss] of kinds) {
    for (const [i, s] of ss.entries()) await joinSecondary(primary!, byKind[kind][i]!, s.id, kind, 20_000, s.filter);
  }
  return { ...byKind, primary: primary!, proxy } as Cluster<NodeHandle>;
}

/** Enables `kind` on `primary` unless it already is, telling secondaries `clusterAddr` ('' = the bound listener). */
async function enableOnce(primary: NodeHandle, kind: Kind, clusterAddr: string): Promise<void> {
  if ((await replStatus(primary.apiAddr, kind)).mode !== 'primary') await enablePrimary(primary.apiAddr, primary.rootToken!, clusterAddr, kind);
}

/**
 * The one activation path: enables `kind` on `primary` (unless it already is), activates
 * `secondary` as its secondary `id`, sets its paths filter when given (performance), and waits
 * until they are in sync. A performance secondary's `rootToken` becomes one generated there with
 * the primary's unseal keys (the token that enabled it does not survive the activation).
 * `startCluster` runs it for every secondary; tests that start or prepare their nodes themselves
 * call it directly.
 */
export async function joinSecondary(primary: NodeHandle, secondary: NodeHandle, id: string, kind: Kind = 'dr', timeoutMs = 20_000, filter?: PathsFilter): Promise<void> {
  const root = primary.rootToken!;
  await enableOnce(primary, kind, '');
  await activateSecondary(secondary.apiAddr, secondary.rootToken!, await secondaryToken(primary.apiAddr, root, id, undefined, kind), kind);
  if (kind === 'performance') Object.assign(secondary, { rootToken: await generateRoot(secondary.apiAddr, primary.unsealKeys) });
  if (filter !== undefined) await setPathsFilter(primary.apiAddr, root, id, filter);
  await waitInSync(primary.apiAddr, secondary.apiAddr, timeoutMs, kind);
}
