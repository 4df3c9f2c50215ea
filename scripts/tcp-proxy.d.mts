/** Types of scripts/tcp-proxy.mjs (one implementation for scripts and tests). */
export interface TcpProxyStats {
  /** Connections forwarded to the target. */
  readonly forwarded: number;
  /** Connections reset on accept while cut. */
  readonly refused: number;
  /** Forwarded connections open right now. */
  readonly open: number;
}

export interface TcpProxy {
  /** "127.0.0.1:<port>" the proxy listens on. */
  readonly address: string;
  readonly port: number;
  cut(): void;
  heal(): void;
  readonly isCut: boolean;
  stats(): TcpProxyStats;
  /** Resets every connection and stops listening. */
  close(): Promise<void>;
}

/** `listenPort` 0 (the default) picks a free port. */
export function startTcpProxy(target: string, opts?: { listenPort?: number }): Promise<TcpProxy>;
