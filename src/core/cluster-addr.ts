/**
 * Cluster addresses in the two forms operators write them (WIRE.md section 8): Vault's
 * `https://host:port` (as `cluster_addr` is written in the config and as Vault shows
 * `known_primary_cluster_addrs`) and `host:port`. Inside the node an address is always `host:port`
 * (what the gRPC channel dials); on the wire it answers in Vault's form.
 *
 *   clusterHostPort('https://10.0.0.5:8201')  // '10.0.0.5:8201'
 *   clusterHostPort('10.0.0.5:8201')          // '10.0.0.5:8201'
 *   clusterHostPort('http://10.0.0.5:8201')   // undefined: the cluster port speaks TLS only
 *   vaultClusterAddr('10.0.0.5:8201')         // 'https://10.0.0.5:8201'
 */

/** Splits "host:port" ("[v6]:port" for IPv6); undefined unless both parts are valid. */
export function splitHostPort(address: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:/[\]@]+)):(\d{1,5})$/.exec(address);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (host === undefined || !(port >= 0 && port <= 65535)) return undefined;
  return { host, port };
}

/**
 * `host:port` from `https://host:port`, `tcp://host:port` (the config file's other spelling) or
 * `host:port` itself, a trailing '/' allowed after a scheme; undefined for anything else.
 */
export function clusterHostPort(raw: string): string | undefined {
  const t = raw.trim();
  const scheme = /^(https|tcp):\/\//i.exec(t);
  const rest = scheme ? t.slice(scheme[0].length).replace(/\/$/, '') : t;
  return splitHostPort(rest) === undefined ? undefined : rest;
}

/** `clusterHostPort`, with '' (no address given: the node's own is used) kept as ''. */
export function optionalClusterHostPort(raw: string): string | undefined {
  return raw.trim() === '' ? '' : clusterHostPort(raw);
}

/** The message for an address `clusterHostPort` refuses, naming the field and both accepted forms. */
export function badClusterAddr(field: string, raw: string): string {
  const shown = raw.length > 80 ? `${raw.slice(0, 80)}...` : raw;
  return `${field}: "${shown}" is not a cluster address; expected "https://host:port" or "host:port" (the cluster port speaks TLS only)`;
}

/** Vault's form of a `host:port` cluster address; '' stays '' (no address), a form with a scheme is kept. */
export function vaultClusterAddr(hostPort: string): string {
  if (hostPort === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(hostPort)) return hostPort;
  return `https://${hostPort}`;
}
