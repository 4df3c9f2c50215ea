/**
 * Issue 8 item 2.4 with a real client: Debian's python3-hvac, unmodified, enables userpass and
 * approle on a fresh node, configures them, logs in with each and uses the tokens
 * (test/e2e/hvac/auth.py). Runs dist/ (npm run build first), like hvac.test.ts.
 */
import { runHvac } from '../harness/hvac.js';
import { useHarness } from '../harness/index.js';

// The harness stops the node after the file (useHarness), pass or fail.
const h = useHarness();

test('python3-hvac logs in with userpass and approle', async () => {
  const node = await h.startNode();
  const seen = await runHvac('auth.py', node.apiAddr);
  expect(seen).toEqual({
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
