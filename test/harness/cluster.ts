/**
 * A replication topology from the one builder (harness.ts): a primary (initialised, optionally
 * with `secret/` as KV v2), each kind enabled on it, and every secondary started, activated under
 * its id and waited on until in sync (test/harness/dr.ts does each step). Nodes are process nodes
 * unless `node: { inProcess: true }`.
 *
 *   const { primary, dr: [east] } = await startCluster(h, { mountKv2: true, dr: ['east'] });
 *   await drOperationToken(east.apiAddr, primary.unsealKeys.slice(0, 2));
 *   const c = await startCluster(h, { node: { inProcess: true }, performance: ['perf-east'] });
 *   await joinSecondary(primary, node, 'west', 'performance');   // a node the test prepared itself
 */
import { activateSecondary, enablePrimary, generateRoot, replStatus, secondaryToken, waitInSync, type Kind } from './dr.js';
import { mountKv2, type Harness, type InProcessNode, type InProcessOptions, type NodeHandle, type StartedNode, type StartOptions } from './harness.js';

export interface ClusterSpec<O> {
  /** Start options of every node; `primary` is merged over them for the primary. */
  readonly node?: O;
  readonly primary?: O;
  /** Process primaries: the init (3 shares, threshold 2 unless given); secondaries get one share. */
  readonly primaryInit?: { readonly shares?: number; readonly threshold?: number };
  /** Mount `secret/` as KV v2 on the primary before replication is enabled. */
  readonly mountKv2?: boolean;
  /** Ids of the DR secondaries, activated in order. */
  readonly dr?: readonly string[];
  /** Ids of the performance secondaries, activated in order. */
  readonly performance?: readonly string[];
}

export interface Cluster<N extends NodeHandle> {
  readonly primary: N & { readonly rootToken: string };
  readonly dr: Array<N & { readonly rootToken: string }>;
  readonly performance: Array<N & { readonly rootToken: string }>;
}

type InProcessSpec = ClusterSpec<InProcessOptions> & { readonly node: InProcessOptions & { readonly inProcess: true } };

export function startCluster(h: Harness, spec: InProcessSpec): Promise<Cluster<InProcessNode>>;
export function startCluster(h: Harness, spec?: ClusterSpec<StartOptions>): Promise<Cluster<StartedNode>>;
export async function startCluster(h: Harness, spec: ClusterSpec<StartOptions> | InProcessSpec = {}): Promise<Cluster<NodeHandle>> {
  const base = spec.node ?? {};
  const start = (o: object, init: StartOptions['init']): Promise<NodeHandle> =>
    base.inProcess === true ? h.startNode({ ...base, ...o, inProcess: true }) : h.startNode({ ...(base as StartOptions), ...o, init });
  const kinds: Array<[Kind, readonly string[]]> = [
    ['dr', spec.dr ?? []],
    ['performance', spec.performance ?? []],
  ];
  const [primary, ...secondaries] = await Promise.all([
    start(spec.primary ?? {}, spec.primaryInit ?? { shares: 3, threshold: 2 }),
    ...kinds.flatMap(([, ids]) => ids.map(() => start({}, true))),
  ]);
  if (spec.mountKv2 === true) await mountKv2(primary!.apiAddr, primary!.rootToken!);
  const out = { primary: primary!, dr: [] as NodeHandle[], performance: [] as NodeHandle[] };
  for (const [kind, ids] of kinds) {
    for (const id of ids) {
      const s = secondaries.shift()!;
      await joinSecondary(primary!, s, id, kind);
      out[kind === 'dr' ? 'dr' : 'performance'].push(s);
    }
  }
  return out as Cluster<NodeHandle>;
}

/**
 * The one activation path: enables `kind` on `primary` (unless it already is), activates
 * `secondary` as its secondary `id`, and waits until they are in sync. A performance secondary's
 * `rootToken` becomes one generated there with the primary's unseal keys (the token that enabled
 * it does not survive the activation). `startCluster` runs it for every secondary; tests that
 * start or prepare their nodes themselves call it directly.
 */
export async function joinSecondary(primary: NodeHandle, secondary: NodeHandle, id: string, kind: Kind = 'dr', timeoutMs = 20_000): Promise<void> {
  const root = primary.rootToken!;
  if ((await replStatus(primary.apiAddr, kind)).mode !== 'primary') await enablePrimary(primary.apiAddr, root, '', kind);
  await activateSecondary(secondary.apiAddr, secondary.rootToken!, await secondaryToken(primary.apiAddr, root, id, undefined, kind), kind);
  if (kind === 'performance') Object.assign(secondary, { rootToken: await generateRoot(secondary.apiAddr, primary.unsealKeys) });
  await waitInSync(primary.apiAddr, secondary.apiAddr, timeoutMs, kind);
}
