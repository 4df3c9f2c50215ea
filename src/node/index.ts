/**
 * The composition root: builds storage -> seal -> services -> transports and runs the node.
 *
 *   await runServer({ dev: true });
 */
export interface ServerOptions {
  readonly configPath?: string;
  readonly dev: boolean;
  readonly devRootTokenId?: string;
  readonly devListenAddress?: string;
}

/** Starts a node and resolves when it has shut down (SIGTERM/SIGINT). */
export async function runServer(_options: ServerOptions): Promise<void> {
  throw new Error('not yet wired');
}
