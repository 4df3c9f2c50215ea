/**
 * What a node's echoes into the shared database say, pure: how healthy its HA connection is
 * (sys/health 474) and the clock skew between two members (sys/ha-status, sys/health), computed as
 * Vault computes them from its standbys' echoes (vault/ha.go, vault/request_forwarding_rpc.go).
 *
 *   heartbeatHealth(lastAnsweredAt, now, echoMs)   // { healthy, sinceMs } or undefined before any
 *   clockSkewMs(member, active)                     // active's clock minus the member's (ms)
 *
 * A Tessera member echoes into the member table (not over a connection to the active node as
 * Vault's standby does): the table is where the lock, the active node and the members are known,
 * so an echo the database does not answer is the HA connection Vault's heartbeat watches failing.
 */

/** Vault's heartbeat health: healthy while the last answered echo is younger than this many intervals. */
export const HEARTBEAT_INTERVALS = 3;

export interface HeartbeatHealth {
  readonly healthy: boolean;
  /** Since the last answered echo (ms). */
  readonly sinceMs: number;
}

/**
 * undefined before any echo was answered (Vault then reports neither field and never 474);
 * healthy while the last answer is younger than HEARTBEAT_INTERVALS echo intervals.
 */
export function heartbeatHealth(answeredAt: number | undefined, now: number, intervalMs: number): HeartbeatHealth | undefined {
  if (answeredAt === undefined) return undefined;
  const sinceMs = Math.max(0, now - answeredAt);
  return { healthy: sinceMs < HEARTBEAT_INTERVALS * intervalMs, sinceMs };
}

/** One echo: the member's clock when it sent it and the database's when it recorded it (ms since the epoch). */
export interface EchoClocks {
  readonly localTime: number | undefined;
  readonly databaseTime: number;
}

/**
 * The active node's clock minus the member's, as Vault's standby computes it from the active
 * node's time in the echo's reply (so a member whose clock is ahead shows a negative skew). Each
 * echo carries the member's clock and is recorded at the database's: the database is the common
 * reference, `(db - member) - (db - active)`. 0 when either echo lacks the member's clock.
 */
export function clockSkewMs(member: EchoClocks, active: EchoClocks): number {
  if (member.localTime === undefined || active.localTime === undefined) return 0;
  return Math.round(member.databaseTime - member.localTime - (active.databaseTime - active.localTime));
}
