/**
 * sys/replication on a node: the status endpoints (unauthenticated, license or hosted), and the
 * Merkle maintenance endpoints (sudo, root namespace only, licensed).
 */
import { z } from 'zod';
import { KIND_POLICY, type Kind } from '../../core/replication/index.js';
import { boolish, empty } from '../fields.js';
import { ok } from '../reply.js';
import { op, type Route } from '../route.js';

/** What these routes need from the replication side of the node. */
export interface ReplicationService {
  status(kind: Kind): Promise<Record<string, unknown>>;
  reindex(opts: { diff: boolean; force: boolean; skipFlush: boolean }): Promise<{ warnings: string[] }>;
  merkleCheck(): Promise<Record<string, unknown>>;
}

const ReindexBody = z.object({
  diff: boolish.default(false),
  force: boolish.default(false),
  skip_flush: boolish.default(false),
});


export function replicationRoutes(repl: ReplicationService): Route[] {
  const statusRoute = (kind: Kind): Route => ({
    pattern: `sys/replication/${kind}/status`,
    access: 'public',
    drSecondary: true,
    license: { feature: KIND_POLICY[kind].license, hostedOk: true },
    operations: { read: op(empty, async () => ok(await repl.status(kind)), `Read the ${kind === 'dr' ? 'DR' : 'performance'} replication status of this node.`) },
  });
  return [
    {
      pattern: 'sys/replication/status',
      access: 'public',
      drSecondary: true,
      license: { feature: KIND_POLICY.dr.license, hostedOk: true },
      operations: {
        read: op(empty, async () => ok({ dr: await repl.status('dr'), performance: await repl.status('performance') }), 'Read the status of both kinds of replication on this node.'),
      },
    },
    statusRoute('dr'),
    statusRoute('performance'),
    {
      pattern: 'sys/replication/reindex',
      access: 'sudo',
      scope: 'node',
      license: { feature: KIND_POLICY.dr.license },
      operations: {
        update: op(ReindexBody, async ({ fields }) => {
          const { warnings } = await repl.reindex({ diff: fields.diff, force: fields.force, skipFlush: fields.skip_flush });
          return ok(null, { warnings });
        }, "Rebuild the Merkle index of this node's replicated data."),
      },
    },
    {
      pattern: 'sys/replication/merkle-check',
      access: 'sudo',
      scope: 'node',
      license: { feature: KIND_POLICY.dr.license },
      operations: { update: op(empty, async () => ok(await repl.merkleCheck()), "Check the Merkle index of this node's replicated data against its storage.") },
    },
  ];
}

