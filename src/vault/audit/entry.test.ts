import { hashString, hashValues } from './hash.js';
import { requestEntry, responseEntry, type AuditInput } from './entry.js';

const salt = 'test-salt';
const input: AuditInput = {
  id: 'req-1',
  operation: 'update',
  path: 'secret/data/app',
  namespace: '',
  data: { data: { password: 'hunter2', n: 3 } },
  remoteAddress: '127.0.0.1',
  clientToken: 'hvs.secrettoken',
  auth: { clientToken: 'hvs.secrettoken', accessor: 'acc123', displayName: 'token', policies: ['default'], metadata: null, tokenType: 'service', ttl: 60, issueTime: 0, remainingUses: 0 },
  mount: { type: 'kv', point: 'secret/', accessor: 'kv_1' },
};

describe('audit entries', () => {
  it('hash every string of the data, the token and the accessor with the device salt; keys, numbers stay', () => {
    const line = JSON.stringify(requestEntry(input, { salt, raw: false, hmacAccessor: true }, new Date(0)));
    for (const secret of ['hunter2', 'hvs.secrettoken', 'acc123']) expect(line).not.toContain(secret);
    expect(line).toContain(hashString(salt, 'hunter2'));
    expect(JSON.parse(line)).toMatchObject({ type: 'request', request: { data: { data: { password: hashString(salt, 'hunter2'), n: 3 } } } });
  });

  it('leave the accessor clear with hmac_accessor off, and everything with log_raw', () => {
    expect(JSON.stringify(requestEntry(input, { salt, raw: false, hmacAccessor: false }, new Date(0)))).toContain('"acc123"');
    const raw = JSON.stringify(responseEntry(input, { data: { v: 'out' } }, { salt, raw: true, hmacAccessor: true }, new Date(0)));
    expect(raw).toContain('hunter2');
    expect(raw).toContain('"out"');
  });

  it('hash nested lists and maps alike', () => {
    expect(hashValues(salt, { a: ['x', 1, null, { b: 'y' }] })).toEqual({ a: [hashString(salt, 'x'), 1, null, { b: hashString(salt, 'y') }] });
  });

  it('remember a deeply frozen value\'s hashes per salt, and never a value that can still change', () => {
    const frozen = Object.freeze({ v: 'one', inner: Object.freeze({ w: 'two' }) });
    const first = hashValues(salt, frozen);
    expect(first).toEqual({ v: hashString(salt, 'one'), inner: { w: hashString(salt, 'two') } });
    expect(hashValues(salt, frozen)).toBe(first);
    expect(hashValues('other-salt', frozen)).toEqual({ v: hashString('other-salt', 'one'), inner: { w: hashString('other-salt', 'two') } });
    // Frozen on top only: its inside may change, so it is hashed afresh each time.
    const shallow = Object.freeze({ inner: { w: 'before' } });
    expect(hashValues(salt, shallow)).toEqual({ inner: { w: hashString(salt, 'before') } });
    (shallow.inner as { w: string }).w = 'after';
    expect(hashValues(salt, shallow)).toEqual({ inner: { w: hashString(salt, 'after') } });
  });

  it('hash a token by its own value only: two tokens, or two salts, never share a remembered hash', () => {
    const auth = (clientToken: string, tokenHash: string): AuditInput => ({ ...input, clientToken, auth: { ...(input.auth as NonNullable<AuditInput['auth']>), clientToken, tokenHash } });
    const o = { salt, raw: false, hmacAccessor: true };
    const a = requestEntry(auth('hvs.tokenA', 'hash-a'), o, new Date(0)) as { auth: { client_token: string }; request: { client_token: string } };
    const b = requestEntry(auth('hvs.tokenB', 'hash-b'), o, new Date(0)) as { auth: { client_token: string } };
    const a2 = responseEntry(auth('hvs.tokenA', 'hash-a'), {}, { ...o, salt: 'other-salt' }, new Date(0)) as { auth: { client_token: string } };
    expect(a.auth.client_token).toBe(hashString(salt, 'hvs.tokenA'));
    expect(a.request.client_token).toBe(hashString(salt, 'hvs.tokenA'));
    expect(b.auth.client_token).toBe(hashString(salt, 'hvs.tokenB'));
    expect(a2.auth.client_token).toBe(hashString('other-salt', 'hvs.tokenA'));
  });
});
