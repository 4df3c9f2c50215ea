import { randomBytes } from 'node:crypto';
import { Internal, InvalidRequest } from '../core/errors.js';
import { ShareCollector } from './collector.js';

function counterNonces(): () => string {
  let i = 0;
  return () => `nonce-${++i}`;
}

describe('ShareCollector', () => {
  it('counts shares until the threshold and hands back copies in order', () => {
    const c = new ShareCollector({ required: 3, newNonce: counterNonces() });
    const [a, b, d] = [randomBytes(33), randomBytes(33), randomBytes(33)];
    expect(c.nonce).toBe('nonce-1');
    expect(c.add(a)).toEqual({ complete: false, progress: 1 });
    expect(c.add(b)).toEqual({ complete: false, progress: 2 });
    expect(c.add(d)).toEqual({ complete: true, progress: 3 });
    const got = c.shares();
    expect(got).toEqual([a, b, d]);
    got[0]!.fill(0);
    expect(c.shares()[0]).toEqual(a);
  });

  it('refuses a share given twice without counting it', () => {
    const c = new ShareCollector({ required: 3 });
    const a = randomBytes(33);
    c.add(a);
    expect(() => c.add(Buffer.from(a))).toThrow(InvalidRequest);
    expect(() => c.add(Buffer.from(a))).toThrow('share already provided');
    expect(c.progress).toBe(1);
  });

  it('refuses a share of the wrong length when one is set', () => {
    const c = new ShareCollector({ required: 2, shareLength: 33 });
    expect(() => c.add(randomBytes(32))).toThrow(InvalidRequest);
    expect(c.progress).toBe(0);
  });

  it('refuses shares beyond the threshold', () => {
    const c = new ShareCollector({ required: 1 });
    c.add(randomBytes(32));
    expect(() => c.add(randomBytes(32))).toThrow(InvalidRequest);
    expect(c.progress).toBe(1);
  });

  it('reset() forgets the shares and starts a new attempt with a new nonce', () => {
    const c = new ShareCollector({ required: 2, newNonce: counterNonces() });
    const a = randomBytes(33);
    c.add(a);
    c.reset();
    expect(c.progress).toBe(0);
    expect(c.nonce).toBe('nonce-2');
    expect(c.add(a)).toEqual({ complete: false, progress: 1 });
  });

  it('uses uuids by default and rejects a non-positive requirement', () => {
    expect(new ShareCollector({ required: 1 }).nonce).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(() => new ShareCollector({ required: 0 })).toThrow(Internal);
  });
});
