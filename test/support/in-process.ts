/**
 * An in-process node on a real LevelDB in a temp dir and real HTTP on 127.0.0.1:0, for
 * integration tests of the HTTP surface. Process-level tests (kill -9) use test/harness instead.
 *
 *   const n = await startTestNode();
 *   const r = await n.call('GET', 'secret/data/a');   // root token by default
 *   await n.stop();
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { writeDevLicense } from '../../src/license/index.js';
import { startNode, type NodeConfig, type RunningNode } from '../../src/node/node.js';

export interface TestNode {
  readonly url: string;
  readonly dir: string;
  readonly node: RunningNode;
  rootToken: string;
  unsealKeys: string[];
  call(method: string, path: string, body?: unknown, opts?: { token?: string | null; headers?: Record<string, string>; raw?: string }): Promise<{ status: number; body: any; text: string }>;
  stop(opts?: { keepDir?: boolean }): Promise<void>;
}

export interface TestNodeOptions {
  readonly license?: 'valid' | 'none' | 'expired';
  readonly hosted?: boolean;
  readonly initialize?: boolean;
  readonly dir?: string;
  readonly walMaxEntries?: number;
  readonly logger?: pino.Logger;
  /** The configured cluster_addr (host:port); default 127.0.0.1:0. */
  readonly clusterAddr?: string;
  /** Performance secondary: how long a forwarded write's answer waits to be applied (ms). */
  readonly forwardWaitMs?: number;
}

export async function startTestNode(opts: TestNodeOptions = {}): Promise<TestNode> {
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'tessera-it-')));
  let licensePath: string | undefined;
  let issuerKeys: string[] = [];
  if ((opts.license ?? 'valid') !== 'none') {
    const lic = await writeDevLicense(join(dir, 'license'), opts.license === 'expired' ? { now: new Date(Date.now() - 400 * 86_400_000) } : {});
    licensePath = lic.licensePath;
    issuerKeys = [lic.issuerPublicKey];
  }
  const config: NodeConfig = {
    storagePath: join(dir, 'data'),
    listenAddress: '127.0.0.1:0',
    apiAddr: '',
    clusterAddr: opts.clusterAddr ?? '127.0.0.1:0',
    ...(licensePath ? { licensePath } : {}),
    licenseIssuerKeys: issuerKeys,
    hosted: opts.hosted === true,
    walMaxEntries: opts.walMaxEntries ?? 10_000,
    walMaxBytes: 64 * 1024 * 1024,
    ...(opts.forwardWaitMs !== undefined ? { forwardWaitMs: opts.forwardWaitMs } : {}),
  };
  const node = await startNode(config, { logger: opts.logger ?? pino({ level: 'silent' }) });
  const url = node.apiAddr;
  const t: TestNode = {
    url,
    dir,
    node,
    rootToken: '',
    unsealKeys: [],
    async call(method, path, body, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const token = o.token === undefined ? t.rootToken : o.token;
      if (token) headers['X-Vault-Token'] = token;
      const res = await fetch(`${url}/v1/${path}`, {
        method,
        headers,
        ...(o.raw !== undefined ? { body: o.raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: res.status, body: parsed, text };
    },
    async stop(s = {}) {
      await node.stop();
      if (!s.keepDir && opts.dir === undefined) await rm(dir, { recursive: true, force: true });
    },
  };
  if (opts.initialize !== false) {
    const init = await t.call('PUT', 'sys/init', { secret_shares: 3, secret_threshold: 2 }, { token: null });
    if (init.status !== 200) throw new Error(`init failed: ${init.text}`);
    t.rootToken = init.body.root_token;
    t.unsealKeys = init.body.keys;
    for (const key of t.unsealKeys.slice(0, 2)) await t.call('PUT', 'sys/unseal', { key }, { token: null });
  }
  return t;
}
