/**
 * An HA standby's requests, as the HTTP layer sees them: raw requests and replies (method, URL,
 * headers, body bytes), so a standby relays exactly what the client sent and answers exactly what
 * the active node answered. src/ha decides which requests a standby diverts and carries them.
 *
 *   const http = await startHttp({ ..., standby: gate });   // gate.divert(raw) or undefined: serve here
 *   const reply = await http.execute(raw);                  // the active node runs a relayed request
 */
import type { RawReply, RawRequest } from '../ha/index.js';
import { LIST_HEADER } from './list-method.js';

export interface StandbyGate {
  /**
   * The reply from elsewhere (relayed, or a 307), or undefined when this node answers
   * itself (now, or once the promise resolves to undefined: it was just becoming active, or as a
   * performance standby it is now current). `local()` says whether a performance standby may
   * answer the request itself (standby-serves.ts). Rejects with a typed error when the request
   * can be neither relayed nor answered here (503 in the error table, saying whether anything was
   * written).
   */
  divert(req: RawRequest, local: () => boolean): Promise<RawReply | undefined> | undefined;
  /**
   * Relays `req` to the active node: a request this standby began to answer turned out to write
   * (StandbyWriteRefused), and nothing was written here.
   */
  relay(req: RawRequest): Promise<RawReply>;
}

/**
 * Headers that belong to one connection, never relayed; and the LIST marker, which belongs to
 * this process (the method is relayed explicitly instead).
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', 'content-length', 'expect', LIST_HEADER]);

/** A request's headers as one value per name, without hop-by-hop ones or the LIST marker. */
export function relayableHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const n = name.toLowerCase();
    if (value === undefined || HOP_BY_HOP.has(n)) continue;
    out[n] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
