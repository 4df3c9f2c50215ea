/**
 * The service version a node runs and reports (`sys/health`, `sys/seal-status`, the replication
 * handshake). Spec section 9: a primary must never run a newer version than its secondaries.
 */
export const VERSION = '1.3.0';

/** Negative when a < b, zero when equal, positive when a > b (semver major.minor.patch). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.+-]/).slice(0, 3).map(Number);
  const pb = b.split(/[.+-]/).slice(0, 3).map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
