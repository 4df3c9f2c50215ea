/**
 * Vault's time and duration renderings.
 *
 *   rfc3339(new Date('2024-05-01T10:00:00.120Z'))  // '2024-05-01T10:00:00.12Z' (Go's RFC3339Nano)
 *   goDuration(5400)                                // '1h30m0s' (Go's time.Duration.String)
 */

/** Go's RFC3339Nano: trailing zeros of the fraction are dropped, and the '.' with them. */
export function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.(\d*?)0*Z$/, (_m, frac: string) => (frac ? `.${frac}Z` : 'Z'));
}

/** Whole seconds as Go prints a time.Duration; KV durations are always whole seconds. */
export function goDuration(seconds: number): string {
  if (seconds < 0) return `-${goDuration(-seconds)}`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/** Whether an RFC 3339 instant ('' meaning never) has been reached at `now`. */
export function reached(instant: string, now: Date): boolean {
  return instant !== '' && Date.parse(instant) <= now.getTime();
}
