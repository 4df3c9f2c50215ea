/** What each kind's secondaries may call: write forwarding is for performance secondaries only. */
import { PermissionDenied } from '../core/errors.js';
import { servePolicy } from './serve-policy.js';

describe('serve policy: the Forward call', () => {
  it('admits an active performance secondary', () => {
    expect(() => servePolicy('performance').admitCall('active', 'forward')).not.toThrow();
  });

  it('refuses a DR secondary (it serves no clients), a revoked id and one not yet bootstrapped', () => {
    expect(() => servePolicy('dr').admitCall('active', 'forward')).toThrow(PermissionDenied);
    expect(() => servePolicy('dr').admitCall('active', 'forward')).toThrow(/DR secondaries do not forward writes/);
    expect(() => servePolicy('performance').admitCall('revoked', 'forward')).toThrow(PermissionDenied);
    expect(() => servePolicy('performance').admitCall('token-issued', 'forward')).toThrow(PermissionDenied);
  });
});
