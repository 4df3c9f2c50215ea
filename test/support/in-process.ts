/**
 * `startTestNode()`: the in-process entry onto the one builder (test/harness/harness.ts), for
 * integration tests of the HTTP surface and of replication logic. Same as
 * `h.startNode({ inProcess: true, ...opts })` on a harness whose cleanup (registered here, in the
 * importing file's afterAll) stops any node a test left running and removes the temp dirs.
 * Process-level tests (kill -9, restarts of a real process, logs) use `h.startNode()` instead.
 *
 *   const n = await startTestNode();                  // initialised (3 shares, threshold 2), unsealed
 *   const r = await n.call('GET', 'secret/data/a');   // root token by default; = n.vault().get(...)
 *   await n.stop();
 */
import { useHarness, type InProcessNode, type InProcessOptions } from '../harness/harness.js';

/** The in-process node handle (test/harness/in-process.ts). */
export type TestNode = InProcessNode;
export type TestNodeOptions = InProcessOptions;

const house = useHarness();

export function startTestNode(opts: TestNodeOptions = {}): Promise<TestNode> {
  return house.startNode({ ...opts, inProcess: true });
}
