/**
 * The in-memory lease store (fake-lease-store.ts) the controller's unit tests drive passes the
 * LeaseStore contract (test/support/lease-store-contract.ts) that the PostgreSQL store passes.
 */
import { runLeaseStoreContract } from '../../../test/support/lease-store-contract.js';
import { FakeClock } from './fake-clock.js';
import { commitUnder, FakeLeaseDb } from './fake-lease-store.js';

runLeaseStoreContract('in-memory fake', async () => {
  const clock = new FakeClock();
  const db = new FakeLeaseDb(() => clock.now());
  return { a: db.connect(), b: db.connect(), commit: commitUnder, elapse: (ms) => clock.advance(ms), close: async () => undefined };
});
