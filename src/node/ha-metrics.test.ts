/**
 * The HA gauges of NodeMetrics: without HA only `tessera_ha_enabled 0`; with HA, what the
 * controller's view says at each scrape (mode one-hot, active, lease age on the active node only).
 */
import { describe, expect, it } from '@jest/globals';
import { NodeMetrics } from './metrics.js';
import type { HaGaugeSource } from './ha-metrics.js';

const metrics = () => new NodeMetrics({ lastWal: () => 0, walRetainedEntries: () => 0, walRetainedBytes: () => 0 });
const haLines = async (m: NodeMetrics) => (await m.render()).split('\n').filter((l) => l.startsWith('tessera_ha_'));

describe('HA gauges', () => {
  it('without HA: tessera_ha_enabled 0 and no other HA sample', async () => {
    const m = metrics();
    expect(await haLines(m)).toEqual(['tessera_ha_enabled 0']);
    m.bindHa(undefined);
    expect(await haLines(m)).toEqual(['tessera_ha_enabled 0']);
  });

  it('follows the controller at each scrape', async () => {
    // A standby that never held the lease (epoch 0) reports the epoch of the row it last read.
    let view: ReturnType<HaGaugeSource['view']> = { mode: 'standby', leaseAgeMs: null, epoch: 0, leaderRow: { epoch: 3 } };
    let active = false;
    const m = metrics();
    m.bindHa({ view: () => view, isActive: () => active, leaseOptions: { ttlMs: 2000 } });
    expect(await haLines(m)).toEqual([
      'tessera_ha_enabled 1',
      'tessera_ha_active 0',
      'tessera_ha_mode{mode="sealed"} 0',
      'tessera_ha_mode{mode="standby"} 1',
      'tessera_ha_mode{mode="active"} 0',
      'tessera_ha_mode{mode="cooldown"} 0',
      'tessera_ha_lease_ttl_seconds 2',
      'tessera_ha_epoch 3',
    ]);
    view = { mode: 'active', leaseAgeMs: 250, epoch: 4 };
    active = true;
    const lines = await haLines(m);
    expect(lines).toContain('tessera_ha_active 1');
    expect(lines).toContain('tessera_ha_mode{mode="active"} 1');
    expect(lines).toContain('tessera_ha_mode{mode="standby"} 0');
    expect(lines).toContain('tessera_ha_lease_age_seconds 0.25');
    expect(lines).toContain('tessera_ha_epoch 4');
    view = { mode: 'cooldown', leaseAgeMs: null, epoch: 4 };
    active = false;
    const after = await haLines(m);
    expect(after).toContain('tessera_ha_mode{mode="cooldown"} 1');
    expect(after.some((l) => l.startsWith('tessera_ha_lease_age_seconds'))).toBe(false);
  });
});
