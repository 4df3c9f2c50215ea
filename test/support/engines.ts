/**
 * An integration suite on both storage engines, without a copy: `forEachEngine` runs the suite's
 * body once in a describe per engine. On PostgreSQL the file gets one private server
 * (test/support/postgres.ts, started before the first PostgreSQL test and stopped after the
 * last), and every in-process node started without storage options gets a database of its own
 * there (a restart on the same home gets the same database back); on LevelDB nothing changes.
 *
 *   forEachEngine((engine) => {
 *     it('seals and unseals', async () => { const n = await startTestNode(); ... });
 *   });
 *   const backend = await openStoredBackend(node.dataDir);   // a stopped node's storage, either engine
 *
 * TESSERA_TEST_ENGINES=leveldb (or postgresql) runs one engine only; without PostgreSQL 15
 * installed (postgresAvailable) the PostgreSQL run fails with the message saying how to install it.
 */
import { join } from 'node:path';
import type { Backend } from '../../src/storage/backend.js';
import { openLevelBackend } from '../../src/storage/leveldb.js';
import { openPostgresBackend } from '../../src/storage/postgres.js';
import { setInProcessPostgres } from '../harness/harness.js';
import { startPostgres, type TestPostgres } from './postgres.js';

export type Engine = 'leveldb' | 'postgresql';

const ALL: readonly Engine[] = ['leveldb', 'postgresql'];

/** The engines a suite runs on: both unless TESSERA_TEST_ENGINES names some. */
export const ENGINES: readonly Engine[] = (() => {
  const named = process.env.TESSERA_TEST_ENGINES?.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (named === undefined || named.length === 0) return ALL;
  for (const n of named) if (!ALL.includes(n as Engine)) throw new Error(`TESSERA_TEST_ENGINES: unknown engine "${n}" (leveldb, postgresql)`);
  return named as Engine[];
})();

/** Databases of this file's PostgreSQL run, by node home. */
const databases = new Map<string, string>();

/** Runs `body` in `describe('on <engine>')` once per engine of ENGINES. */
export function forEachEngine(body: (engine: Engine) => void): void {
  describe.each(ENGINES.map((e) => [e]))('on %s', (engine) => {
    if (engine === 'postgresql') usePostgresNodes();
    body(engine);
  });
}

function usePostgresNodes(): void {
  let server: TestPostgres | undefined;
  let made = 0;
  beforeAll(async () => {
    server = await startPostgres();
    const pg = server;
    setInProcessPostgres(async (home) => {
      let url = databases.get(home);
      if (url === undefined) {
        url = await pg.createDatabase(`node_${++made}`);
        databases.set(home, url);
      }
      return { connectionUrl: url };
    });
  }, 60_000);
  afterAll(async () => {
    setInProcessPostgres(undefined);
    const used = made;
    databases.clear();
    await server?.stop();
    // A suite whose nodes all chose their own storage would pass here without testing PostgreSQL.
    if (used === 0) throw new Error('forEachEngine: no in-process node of the PostgreSQL run stored in PostgreSQL');
  });
}

/**
 * The storage of the in-process node whose home is `home`, opened directly (the node must be
 * stopped): its PostgreSQL database when this file's PostgreSQL run gave it one, else its LevelDB.
 */
export function openStoredBackend(home: string): Promise<Backend> {
  const url = databases.get(home);
  return url !== undefined ? openPostgresBackend({ connectionUrl: url }) : openLevelBackend({ path: join(home, 'data') });
}
