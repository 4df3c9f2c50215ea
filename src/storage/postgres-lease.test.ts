/**
 * The PostgreSQL lease store (postgres-lease.ts) passes the LeaseStore contract
 * (test/support/lease-store-contract.ts) on a private PostgreSQL: each case on its own HA tables,
 * with two stores (two nodes' pools), and commits made by a PostgreSQL data backend whose guard is
 * the store's fence. The database's clock times the row, so `elapse` is real time.
 */
import { usePostgres } from '../../test/support/postgres.js';
import { runLeaseStoreContract } from '../../test/support/lease-store-contract.js';
import type { Backend } from './backend.js';
import { BatchRefused, openPostgresBackend, type BatchGuard } from './postgres.js';
import { openPostgresLease } from './postgres-lease.js';

const pg = usePostgres();
let cases = 0;

runLeaseStoreContract('postgresql', async () => {
  const n = ++cases;
  const connectionUrl = pg().url;
  const table = `ha_contract_${n}`;
  const a = await openPostgresLease({ connectionUrl, table });
  const b = await openPostgresLease({ connectionUrl, table });
  const backends = new Map<BatchGuard, Backend>();
  return {
    a,
    b,
    async commit(guard) {
      let backend = backends.get(guard);
      if (backend === undefined) {
        backend = await openPostgresBackend({ connectionUrl, table: `kv_contract_${n}_${backends.size}`, guard });
        backends.set(guard, backend);
      }
      try {
        await backend.batch([{ type: 'put', key: 'k', value: Buffer.from('v') }], { sync: true });
        return undefined;
      } catch (e) {
        if (e instanceof BatchRefused) return e.reason;
        throw e;
      }
    },
    elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    async close() {
      for (const backend of backends.values()) await backend.close();
      await a.close();
      await b.close();
    },
  };
});
