/**
 * `sys/replication/events`: the node's replication events (src/replication/events.ts), sudo, root
 * namespace only, answered on a DR secondary too. By default a server-sent event stream
 * (text/event-stream): the history first (after `Last-Event-ID` or `?after=`), then live events,
 * each `id: <n>` + `data: <json>`, with a comment line as heartbeat so proxies keep it open; it
 * ends when the client goes away. `?format=json` answers the history once, in the usual envelope.
 *
 *   curl -N -H "X-Vault-Token: $T" $VAULT_ADDR/v1/sys/replication/events
 *   id: 3
 *   data: {"id":3,"time":"2026-11-23T22:30:00.000Z","kind":"dr","type":"mode-changed","from":"disabled","to":"primary"}
 */
import { z } from 'zod';
import { InvalidRequest } from '../../core/errors.js';
import type { FollowItem, ReplicationEvent } from '../../replication/index.js';
import { ok, streamed } from '../reply.js';
import { op, type Route } from '../route.js';

/** What the route needs: the history, a live follow, and the heartbeat interval. */
export interface EventsService {
  history(after?: number): ReplicationEvent[];
  follow(o: { after?: number; signal: AbortSignal; heartbeatMs: number }): AsyncIterable<FollowItem>;
  readonly capacity: number;
  readonly heartbeatMs: number;
}

const Query = z.object({
  format: z.enum(['sse', 'json']).default('sse'),
  after: z.string().regex(/^\d{1,15}$/, 'after must be an event id (a whole number)').transform(Number).optional(),
});

/** A Last-Event-ID: an id this node gave (a whole number); anything else is refused, not ignored. */
function lastEventId(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  if (!/^\d{1,15}$/.test(raw.trim())) throw new InvalidRequest('Last-Event-ID must be an event id (a whole number)');
  return Number(raw.trim());
}

/** One SSE frame: the event's id, and its JSON on one data line (JSON.stringify has no newline). */
export function sseFrame(item: FollowItem): string {
  if ('heartbeat' in item) return ': heartbeat\n\n';
  return `id: ${item.event.id}\ndata: ${JSON.stringify(item.event)}\n\n`;
}

export function replicationEventsRoutes(events: EventsService): Route[] {
  return [
    {
      pattern: 'sys/replication/events',
      access: 'sudo',
      scope: 'node',
      drSecondary: true,
      operations: {
        read: op(Query, async ({ fields, req }) => {
          // The query wins over the header: a client that names where to start means it.
          const after = fields.after ?? lastEventId(req.lastEventId);
          if (fields.format === 'json') return ok({ events: events.history(after ?? 0), capacity: events.capacity });
          return streamed('text/event-stream; charset=utf-8', async function* (signal) {
            // Tells EventSource how soon to reconnect, and opens the body at once.
            yield 'retry: 3000\n\n';
            for await (const item of events.follow({ ...(after !== undefined ? { after } : {}), signal, heartbeatMs: events.heartbeatMs })) yield sseFrame(item);
          });
        }, "Stream the node's replication events (server-sent events), or read their history with format=json."),
      },
    },
  ];
}
