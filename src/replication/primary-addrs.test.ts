import { ABSENT_REPLIES_BEFORE_FORGET, MAX_KNOWN_PRIMARY_ADDRS, PrimaryAddrs, advertisedAddrs } from './primary-addrs.js';

describe('a primary cluster\'s addresses', () => {
  it('the primary advertises the address secondaries are told first, then every node, distinct and dialable', () => {
    expect(advertisedAddrs('10.0.0.9:8201', ['10.0.0.1:8201', 'https://10.0.0.2:8201', '10.0.0.9:8201', 'nonsense', '10.0.0.3:0'])).toEqual([
      '10.0.0.9:8201', '10.0.0.1:8201', '10.0.0.2:8201',
    ]);
    expect(advertisedAddrs('10.0.0.9:8201', undefined)).toEqual(['10.0.0.9:8201']);
    expect(advertisedAddrs('a:1', Array.from({ length: 40 }, (_, i) => `n${i}:8201`))).toHaveLength(MAX_KNOWN_PRIMARY_ADDRS);
  });

  it('dials the last connected address first (else the configured one) and goes round, the order kept', () => {
    const a = new PrimaryAddrs({ configured: 'a:1', known: ['a:1', 'b:1', 'c:1'], connected: 'b:1' });
    expect(a.known).toEqual(['a:1', 'b:1', 'c:1']);
    const seen = [a.current];
    for (let i = 0; i < 3; i++) {
      a.advance();
      seen.push(a.current);
    }
    expect(seen).toEqual(['b:1', 'c:1', 'a:1', 'b:1']);
    expect(new PrimaryAddrs({ configured: 'a:1', known: ['a:1', 'b:1'] }).current).toBe('a:1');
  });

  it('learns new addresses, keeps the cursor on the address in use, and reports a change only when the list changed', () => {
    const a = new PrimaryAddrs({ configured: 'a:1' });
    expect(a.markConnected()).toBe(true);
    expect(a.markConnected()).toBe(false);
    expect(a.learn(['a:1', 'b:1'])).toBe(true);
    expect(a.learn(['a:1', 'b:1'])).toBe(false);
    // An older primary names nothing: nothing changes.
    expect(a.learn([])).toBe(false);
    expect(a.known).toEqual(['a:1', 'b:1']);
    expect(a.current).toBe('a:1');
  });

  it(`forgets an address left out of ${ABSENT_REPLIES_BEFORE_FORGET} replies in a row, never the configured or connected one`, () => {
    const a = new PrimaryAddrs({ configured: 'a:1', known: ['a:1', 'b:1', 'c:1', 'd:1'] });
    a.advance();
    a.markConnected(); // connected at b:1
    for (let i = 1; i < ABSENT_REPLIES_BEFORE_FORGET; i++) {
      expect(a.learn(['x:1', 'd:1'])).toBe(i === 1);
      // A reply that names c:1 again starts its count over.
      if (i === 5) a.learn(['x:1', 'c:1', 'd:1']);
    }
    expect(a.learn(['x:1', 'd:1'])).toBe(false);
    for (let i = 0; i < 5; i++) a.learn(['x:1', 'd:1']);
    // a:1 (configured) and b:1 (connected) are kept though never named; c:1 was forgotten.
    expect(a.known).toEqual(['a:1', 'b:1', 'd:1', 'x:1']);
    expect(a.current).toBe('b:1');
  });

  it(`keeps at most ${MAX_KNOWN_PRIMARY_ADDRS}, the configured and connected ones always`, () => {
    const a = new PrimaryAddrs({ configured: 'a:1', known: Array.from({ length: 30 }, (_, i) => `old${i}:1`) });
    expect(a.size).toBe(MAX_KNOWN_PRIMARY_ADDRS);
    a.learn(Array.from({ length: 20 }, (_, i) => `new${i}:1`));
    expect(a.size).toBe(MAX_KNOWN_PRIMARY_ADDRS);
    expect(a.known).toContain('a:1');
    expect(a.known.filter((x) => x.startsWith('new'))).toHaveLength(MAX_KNOWN_PRIMARY_ADDRS - 1);
  });

  it('keeps a configured address of another form (a test transport) as the one to dial', () => {
    const a = new PrimaryAddrs({ configured: 'loop:p', known: ['loop:p'] });
    expect(a.current).toBe('loop:p');
    a.advance();
    expect(a.current).toBe('loop:p');
  });
  it('jumps to the address a standby named: known or learned, bounded, never an undialable one', () => {
    const a = new PrimaryAddrs({ configured: 'a:1', known: ['a:1', 'b:1', 'c:1'] });
    expect(a.jumpTo('https://c:1')).toBe(true);
    expect(a.current).toBe('c:1');
    expect(a.known).toEqual(['a:1', 'b:1', 'c:1']);
    // New: learned at the end and dialled next.
    expect(a.jumpTo('d:1')).toBe(true);
    expect(a.known).toEqual(['a:1', 'b:1', 'c:1', 'd:1']);
    expect(a.current).toBe('d:1');
    a.advance();
    expect(a.current).toBe('a:1');
    // Nothing dialable: the cursor stays.
    expect(a.jumpTo('nonsense')).toBe(false);
    expect(a.jumpTo('e:0')).toBe(false);
    expect(a.current).toBe('a:1');
    // Full: an address that is neither configured, connected nor current makes room.
    const full = new PrimaryAddrs({ configured: 'n0:1', known: Array.from({ length: MAX_KNOWN_PRIMARY_ADDRS }, (_, i) => `n${i}:1`) });
    expect(full.jumpTo('new:1')).toBe(true);
    expect(full.size).toBe(MAX_KNOWN_PRIMARY_ADDRS);
    expect(full.current).toBe('new:1');
    expect(full.known).toContain('n0:1');
  });
});
