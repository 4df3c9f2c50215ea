/**
 * After an unseal, a node serves nothing until its mounts, namespaces and policies are loaded:
 * until then it answers 503 (as a sealed node), never "no such secret" for a secret that exists.
 */
import { useHarness, type InProcessNode } from '../harness/index.js';

const h = useHarness();

describe('unseal under concurrent traffic', () => {
  it('never answers 404 for an existing secret while the unsealed node is still loading', async () => {
    const dir = await h.tempDir('unseal-loading-');
    const node: InProcessNode = await h.startNode({ inProcess: true, dir });
    await node.vault().post('sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    // Enough namespaces and mounts that loading them takes a few turns of the event loop.
    for (let i = 0; i < 20; i++) {
      await node.vault().post(`sys/namespaces/team${i}`);
      await node.vault().post(`sys/mounts/kv${i}`, { type: 'kv', options: { version: '2' } });
    }
    expect((await node.vault().put('secret/data/app', { data: { v: 1 } })).status).toBe(200);
    const { rootToken, unsealKeys } = node;
    await node.stop({ keepDir: true });

    for (let restart = 0; restart < 3; restart++) {
      const again = await h.startNode({ inProcess: true, dir, initialize: false });
      again.rootToken = rootToken;
      const seen = new Map<number, number>();
      const notFound: string[] = [];
      let unsealed = false;
      let okAfterUnseal = 0;
      const reader = async (): Promise<void> => {
        // Until the unseal has answered and every reader has seen the secret a few times.
        while (!unsealed || okAfterUnseal < 40) {
          const r = await again.vault(rootToken).get('secret/data/app');
          seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
          if (r.status === 404) notFound.push(r.text);
          if (unsealed && r.status === 200) okAfterUnseal++;
        }
      };
      const readers = Array.from({ length: 8 }, () => reader());
      for (const key of unsealKeys.slice(0, 2)) {
        expect((await again.vault(null).put('sys/unseal', { key })).status).toBe(200);
      }
      unsealed = true;
      await Promise.all(readers);
      expect(notFound).toEqual([]);
      expect([...seen.keys()].sort()).toEqual([200, 503]);
      await again.stop({ keepDir: true });
    }
  });
});
