/**
 * Activation safety of both kinds (issue 17 items 7, 8 and 19): an activation token's ttl is
 * bounded. In-process nodes over real gRPC/mTLS and real LevelDB.
 */
import { base, replStatus, type Kind } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const KINDS: readonly Kind[] = ['dr', 'performance'];

let p: TestNode;
beforeAll(async () => {
  p = await startTestNode();
  for (const kind of KINDS) expect((await p.call('POST', `${base(kind)}/primary/enable`, {})).status).toBe(204);
}, 30_000);

describe.each(KINDS)('%s', (kind) => {
  test('an activation token ttl past 768h is a 400 naming the bound, and the id is not registered', async () => {
    const known = async (): Promise<string[]> => (await replStatus(p, kind)).known_secondaries;
    const before = await known();
    for (const ttl of ['100000h', '769h', 768 * 3600 + 1]) {
      const r = await p.call('POST', `${base(kind)}/primary/secondary-token`, { id: `long-${kind}`, ttl });
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatch(/is longer than the 768h0m0s an activation token may live/);
    }
    expect(await known()).toEqual(before);
    // The bound itself is accepted, under the same id (nothing was registered before).
    const ok = await p.call('POST', `${base(kind)}/primary/secondary-token`, { id: `long-${kind}`, ttl: '768h' });
    expect(ok.status).toBe(200);
    expect(await known()).toEqual([...before, `long-${kind}`].sort());
  });
});
