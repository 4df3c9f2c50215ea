/**
 * Issue 8 item 2.4 with a real client: Debian's python3-hvac, unmodified, enables userpass and
 * approle on a fresh node, configures them, logs in with each and uses the tokens
 * (test/e2e/hvac/auth.py). Runs dist/ (npm run build first), like hvac.test.ts.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { useHarness, type StartedNode } from '../harness/index.js';

const run = promisify(execFile);
const script = fileURLToPath(new URL('./hvac/auth.py', import.meta.url));
const PYTHON = process.env.TESSERA_HVAC_PYTHON ?? '/usr/bin/python3';

const h = useHarness();
let node: StartedNode;

beforeAll(async () => {
  node = await h.startNode();
}, 30_000);

afterAll(async () => {
  await node?.stop();
}, 20_000);

test('python3-hvac logs in with userpass and approle', async () => {
  let stdout: string;
  try {
    ({ stdout } = await run(PYTHON, [script, node.apiAddr], { timeout: 45_000 }));
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`hvac script failed: ${err.stderr ?? err.message}`);
  }
  expect(JSON.parse(stdout)).toEqual({
    methods: ['approle/', 'token/', 'userpass/'],
    userpass_description: 'people',
    users: ['alice'],
    user_has_password: false,
    userpass_policies: ['app', 'default'],
    userpass_authenticated: true,
    userpass_reads: { password: 'db-pw' },
    userpass_wrong_refused: true,
    roles: ['web'],
    secret_id_num_uses: 1,
    approle_metadata: { role_name: 'web', team: 'blue' },
    approle_lease: 1200,
    approle_authenticated: true,
    approle_reads: { password: 'db-pw' },
    approle_second_refused: true,
    approle_token_revoked: true,
  });
}, 60_000);
