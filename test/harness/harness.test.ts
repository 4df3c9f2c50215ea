/**
 * The harness itself: start-up parsing, output capture, clean stop, cleanup of leftovers, the
 * topology builder's options, and the poll-with-deadline helper. Needs the build (dist/).
 */
import { existsSync } from 'node:fs';
import { parseConfigText } from '../../src/node/config.js';
import {
  createHarness,
  eventually,
  EventuallyTimeout,
  nodeConfig,
  NodeStartError,
  replStatus,
  spawnNode,
  startCluster,
  useHarness,
  vault,
} from './index.js';

const h = useHarness();

describe('startNode (dev)', () => {
  test('parses the banner, captures output, and stops cleanly on SIGTERM', async () => {
    const node = await h.startNode({ dev: true });
    expect(node.apiAddr).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(node.rootToken).toMatch(/^hvs\.[A-Za-z0-9]{24}$/);
    expect(Buffer.from(node.unsealKey ?? '', 'base64').length).toBeGreaterThanOrEqual(16);
    expect(existsSync(node.storageDir)).toBe(true);

    const health = await vault(node.apiAddr).get('sys/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ initialized: true, sealed: false });
    const mounts = await vault(node.apiAddr, node.rootToken).get('sys/mounts');
    expect(mounts.body.data['secret/']).toMatchObject({ type: 'kv', options: { version: '2' } });

    // stdout carries the banner only; the logs are JSON on stderr.
    expect(node.stdoutLines.some((l) => l.startsWith('{'))).toBe(false);
    expect(node.stderrLines.some((l) => JSON.parse(l).msg === 'http listening')).toBe(true);

    expect(await node.stop()).toEqual({ code: 0, signal: null });
  }, 30_000);
});

describe('startNode (config file)', () => {
  test('waits for the listening log line of an uninitialised node', async () => {
    const node = await h.startNode();
    expect(node.rootToken).toBeUndefined();
    const status = await vault(node.apiAddr).get('sys/seal-status');
    expect(status.body).toMatchObject({ initialized: false, sealed: true });
    expect(await node.stop()).toEqual({ code: 0, signal: null });
  }, 30_000);

  test('rejects with the stderr tail when the node exits before it is ready', async () => {
    const start = spawnNode({ args: ['server', '-config', '/nonexistent/tessera.hcl'], ready: 'listening-log', readyTimeoutMs: 15_000 });
    await expect(start).rejects.toThrow(NodeStartError);
    await expect(start).rejects.toThrow(/exited before it was ready/);
  }, 20_000);
});

describe('nodeConfig', () => {
  const issuer = Buffer.alloc(32, 7).toString('base64');

  test('sets the cluster address and the replication block when given', () => {
    const c = parseConfigText(nodeConfig('/tmp/home', issuer, 'info', { clusterAddr: '127.0.0.1:9201', replication: { walMaxEntries: 50 } }), 'config.hcl');
    expect(c.clusterAddr).toBe('127.0.0.1:9201');
    expect(c.replication).toEqual({ walMaxEntries: 50, walMaxBytes: 268_435_456 });
  });

  test('defaults to a free cluster port and the default WAL bounds', () => {
    const c = parseConfigText(nodeConfig('/tmp/home', issuer, 'info'), 'config.hcl');
    expect(c.clusterAddr).toBe('127.0.0.1:0');
    expect(c.replication).toEqual({ walMaxEntries: 100_000, walMaxBytes: 268_435_456 });
  });
});

describe('cleanup', () => {
  test('kills nodes that are still running and removes temp dirs', async () => {
    const own = createHarness();
    const node = await own.startNode({ dev: true });
    const dir = await own.tempDir();
    await own.cleanup();
    expect(await node.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(node.dataDir)).toBe(false);
  }, 30_000);
});

describe('startCluster', () => {
  test('runs its hooks in order, tells secondaries the proxy, and sets a secondary\'s filter before the sync wait', async () => {
    const seen: string[] = [];
    const c = await startCluster(h, {
      node: { inProcess: true },
      proxy: true,
      performance: [{ id: 'perf-one', node: { forwardWaitMs: 1_000 }, filter: { mode: 'deny', paths: ['other'] } }],
      beforeEnable: async ({ primary, performance: [s], proxy }) => {
        seen.push(`enable:${(await replStatus(primary.apiAddr, 'performance')).mode}:${(await replStatus(s!.apiAddr, 'performance')).mode}:${proxy !== undefined}`);
        expect((await primary.vault().post('sys/mounts/other', { type: 'kv', options: { version: '1' } })).status).toBe(204);
      },
      beforeActivate: async ({ primary, performance: [s] }) => {
        seen.push(`activate:${(await replStatus(primary.apiAddr, 'performance')).mode}:${(await replStatus(s!.apiAddr, 'performance')).mode}`);
      },
    });
    expect(seen).toEqual(['enable:disabled:disabled:true', 'activate:primary:disabled']);
    const s = c.performance[0]!;
    expect((await replStatus(s.apiAddr, 'performance')).primary_cluster_addr).toBe(`https://${c.proxy!.address}`);
    expect(c.proxy!.stats().forwarded).toBeGreaterThan(0);
    expect((await c.primary.vault().get('sys/replication/performance/primary/paths-filter/perf-one')).body.data).toEqual({ mode: 'deny', paths: ['other'] });
    expect((await s.vault().get('sys/mounts')).body.data['other/']).toBeUndefined();
  }, 30_000);
});

describe('eventually', () => {
  test('returns the first value that does not throw', async () => {
    let calls = 0;
    const v = await eventually(
      () => {
        calls++;
        if (calls < 3) throw new Error('not yet');
        return calls;
      },
      { timeoutMs: 2_000, intervalMs: 5 },
    );
    expect(v).toBe(3);
  });

  test('rethrows the last failure after the deadline', async () => {
    const started = Date.now();
    await expect(
      eventually(
        () => {
          throw new Error('never');
        },
        { timeoutMs: 200, intervalMs: 20 },
      ),
    ).rejects.toThrow(EventuallyTimeout);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
