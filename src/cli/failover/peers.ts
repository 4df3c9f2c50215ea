/**
 * Reaching the other nodes of a failover: a client for another address with the same TLS, token
 * and namespace settings as the one given, and short-timeout probes that answer "unreachable"
 * instead of throwing (a plan must describe a dead primary, not fail on it).
 *
 *   const p = peer(ctx, flags, 'http://10.0.0.1:8200', 3000);
 *   const probe = await probeHealth(p);   // { reachable: false, error: 'connect ECONNREFUSED ...' }
 */
import { TesseraClient, tlsFetch, type KindStatus, type ReplicationKind } from '../../api/index.js';
import { connectionOptions, type ClientFlags } from '../connection.js';
import { describe, type Context } from '../context.js';

/** A client for `address`, with every request bounded by `timeoutMs`. */
export function peer(ctx: Context, flags: ClientFlags, address: string, timeoutMs: number, token?: string): TesseraClient {
  const options = connectionOptions({ ...flags, address }, ctx.io.env);
  const base: typeof fetch = ctx.io.fetchImpl ?? (address.startsWith('https:') ? tlsFetch(options.tls) : fetch);
  const timed: typeof fetch = (input, init) => base(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  // Steps read answers as they come: no response wrapping, whatever -wrap-ttl or TESSERA_WRAP_TTL say.
  return new TesseraClient({ ...options, wrapTtl: undefined, ...(token !== undefined ? { token } : {}), fetchImpl: timed });
}

export interface HealthProbe {
  readonly reachable: boolean;
  /** sys/health's status: 200 active, 472 DR secondary, 503 sealed, ... */
  readonly health_status?: number;
  readonly error?: string;
}

export async function probeHealth(client: TesseraClient): Promise<HealthProbe> {
  try {
    const h = await client.sys.health();
    return { reachable: true, health_status: h.status };
  } catch (e) {
    return { reachable: false, error: oneLine(e) };
  }
}

/** One kind's status, or undefined when the node does not answer. */
export async function statusOrUndefined(client: TesseraClient, kind: ReplicationKind): Promise<KindStatus | undefined> {
  try {
    return await client.replication.kindStatus(kind);
  } catch {
    return undefined;
  }
}

export function oneLine(e: unknown): string {
  const cause = (e as { cause?: { message?: unknown; cause?: { message?: unknown } } })?.cause;
  const inner = typeof cause?.cause?.message === 'string' ? cause.cause.message : typeof cause?.message === 'string' ? cause.message : undefined;
  const text = describe(e).replace(/\s*\n+\s*/g, ' ').trim();
  return inner !== undefined && !text.includes(inner) ? `${text} (${inner})` : text;
}

export const field = (st: KindStatus | undefined, name: string): unknown => (st as Record<string, unknown> | undefined)?.[name];
export const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) || 0 : 0);
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');
