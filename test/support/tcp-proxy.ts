/**
 * A TCP proxy a test controls, to play a network partition between two real processes. The one
 * implementation lives in scripts/tcp-proxy.mjs (the nemesis harness uses it too); see there.
 */
export { startTcpProxy, type TcpProxy, type TcpProxyStats } from '../../scripts/tcp-proxy.mjs';
