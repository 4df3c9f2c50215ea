import { RateEstimator, etaSeconds, walHeadroomEntries } from './rate.js';

describe('RateEstimator', () => {
  it('measures over the window, falls to 0 once the counter stops, and restarts when it goes down', () => {
    const r = new RateEstimator({ windowMs: 10_000 });
    expect(r.perSecond(0)).toBe(0);
    for (let t = 0; t <= 10_000; t += 1000) r.sample(t, t / 100); // 10 per second
    expect(r.perSecond(10_000)).toBeCloseTo(10);
    // Stopped: the rate decays, then is 0 once a whole window passed without change.
    expect(r.perSecond(15_000)).toBeLessThan(10);
    r.sample(21_000, 100);
    expect(r.perSecond(21_000)).toBe(0);
    r.sample(22_000, 5); // a new merkle-sync counts from 0 again
    r.sample(24_000, 25);
    expect(r.perSecond(24_000)).toBeCloseTo(10);
  });

  it('keeps memory bounded however often it is sampled', () => {
    const r = new RateEstimator({ windowMs: 5_000, minGapMs: 500 });
    for (let t = 0; t < 60_000; t += 7) r.sample(t, t);
    expect((r as unknown as { samples: unknown[] }).samples.length).toBeLessThanOrEqual(5_000 / 500 + 2);
    expect(r.perSecond(60_000)).toBeCloseTo(1000, -1);
  });
});

describe('etaSeconds and walHeadroomEntries', () => {
  it('gives an ETA only while something moves', () => {
    expect(etaSeconds(100, 10)).toBe(10);
    expect(etaSeconds(0, 0)).toBe(0);
    expect(etaSeconds(5, 0)).toBeNull();
  });

  it('counts entries left before a secondary falls off the retained WAL, by entries and by bytes', () => {
    const w = { first: 1, last: 40, retainedBytes: 4000, maxEntries: 100, maxBytes: 1 << 30 };
    expect(walHeadroomEntries({ ...w, applied: 40 })).toBe(100);
    expect(walHeadroomEntries({ ...w, applied: 10 })).toBe(70);
    // Full WAL: the headroom is the secondary's distance from the first retained entry.
    expect(walHeadroomEntries({ ...w, first: 61, last: 160, applied: 100 })).toBe(40);
    expect(walHeadroomEntries({ ...w, first: 61, last: 160, applied: 60 })).toBe(0);
    expect(walHeadroomEntries({ ...w, first: 61, last: 160, applied: 59 })).toBe(0);
    // 100 bytes per entry and a 5000-byte bound: 50 entries fit, not 100.
    expect(walHeadroomEntries({ ...w, maxBytes: 5000, applied: 30 })).toBe(40);
  });
});
