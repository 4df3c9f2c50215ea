/**
 * Issue 8 item 2.4 with a real client: Debian's python3-hvac, unmodified, enables userpass and
 * approle on a fresh node, configures them, logs in with each and uses the tokens
 * (test/e2e/hvac/auth.py); issue 27: approle's custom secret ID, lookups and destroys, the empty
 * LIST's 404, and the 404 of a deleted KV v2 version with its metadata, as hvac reads them. Runs
 * dist/ (npm run build first), like hvac.test.ts.
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
    empty_accessors: 'InvalidPath',
    custom_secret_id: 'svc-own-secret',
    custom_duplicate: ['failed to store secret_id: SecretID is already registered'],
    lookup_fields: ['cidr_list', 'creation_time', 'expiration_time', 'last_updated_time', 'metadata', 'secret_id_accessor', 'secret_id_num_uses', 'secret_id_ttl', 'token_bound_cidrs'],
    lookup_metadata: { team: 'green' },
    lookup_shows_secret: false,
    accessor_lookup_same: true,
    accessors: true,
    custom_login: true,
    destroy_status: 204,
    destroyed_login_refused: true,
    unknown_lookup_status: 204,
    destroy_accessor_status: 204,
    gone_accessor: { error: expect.stringMatching(/^failed to find accessor entry for secret_id_accessor: "[0-9a-f-]{36}"$/) },
    emptied_accessors: 'InvalidPath',
    deleted_read: { data: null, version: 1, destroyed: false, has_deletion_time: true, errors: null },
    approle_token_revoked: true,
  });
}, 60_000);
