/**
 * auth/token/revoke of an activation token (issue 26 item 13a). The JWT of
 * primary/secondary-token stands for the wrapping token it names: revoking the JWT revokes that
 * token, so it no longer activates a secondary of either kind, and the primary's list of
 * secondaries stays as it was (the id is revoked by revoke-secondary, which still works after).
 * In-process nodes over real gRPC/mTLS on 127.0.0.1.
 */
import { base, secondaryToken, type Kind } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const nodes: TestNode[] = [];
let primary: TestNode;
let secondary: TestNode;

beforeAll(async () => {
  primary = await startTestNode();
  secondary = await startTestNode();
  nodes.push(primary, secondary);
  for (const kind of ['dr', 'performance'] as const) expect((await primary.call('POST', `${base(kind)}/primary/enable`, {})).status).toBe(204);
}, 60_000);

afterAll(async () => {
  for (const n of nodes.reverse()) await n.stop();
});

/** The primary's view of its secondaries of `kind`. */
async function listed(kind: Kind): Promise<unknown> {
  const st = await primary.call('GET', `${base(kind)}/status`);
  expect(st.status).toBe(200);
  return st.body.data.known_secondaries;
}

describe.each(['dr', 'performance'] as const)('a %s activation token revoked through auth/token/revoke', (kind) => {
  it('no longer activates a secondary, and the list of secondaries is as it was', async () => {
    const id = `${kind}-revoked`;
    const jwt = await secondaryToken(primary, id, undefined, kind);
    const before = await listed(kind);
    expect(JSON.stringify(before)).toContain(id);

    const revoked = await primary.call('POST', 'auth/token/revoke', { token: jwt });
    expect(revoked.status).toBe(204);
    // The wrapping token it named is gone.
    const lookup = await primary.call('POST', 'sys/wrapping/lookup', { token: jwt }, { token: null });
    expect(lookup.status).toBe(400);
    expect(await listed(kind)).toEqual(before);

    const enable = await secondary.call('POST', `${base(kind)}/secondary/enable`, { token: jwt });
    expect(enable.status).toBe(400);
    expect(JSON.stringify(enable.body.errors)).toMatch(/wrapping token is not valid or does not exist/);
    expect((await secondary.call('GET', `${base(kind)}/status`)).body.data.mode).toBe('disabled');
    expect(await listed(kind)).toEqual(before);

    // revoke-secondary of the id still works, as for any issued token.
    expect([200, 204]).toContain((await primary.call('POST', `${base(kind)}/primary/revoke-secondary`, { id })).status);
  });
});

test('a JWT this primary did not sign revokes nothing and answers 204, as an unknown token', async () => {
  const jwt = await secondaryToken(primary, 'dr-kept');
  const [h, p, sig] = jwt.split('.');
  const forged = `${h}.${p}.${sig!.slice(0, -4)}AAAA`;
  expect((await primary.call('POST', 'auth/token/revoke', { token: forged })).status).toBe(204);
  expect((await primary.call('POST', 'sys/wrapping/lookup', { token: jwt }, { token: null })).status).toBe(200);
});
