/**
 * A second real client, unmodified: Debian's python3-hvac drives a fresh non-dev node through
 * init, unseal, KV v1 and v2 mounts, KV read/write/list/delete, policies, token create, lookup
 * and revoke, response wrapping and unwrap, its generic list (`?list=True`), the policy list's
 * top-level `keys`, cubbyhole, and seal (test/e2e/hvac/drive.py). `.ci/run` installs
 * python3-hvac; the system interpreter is used because that is where Debian puts the module.
 */
import { runHvac } from '../harness/hvac.js';
import { useHarness } from '../harness/index.js';

// The harness stops the node after the file (useHarness), pass or fail.
const h = useHarness();

test('python3-hvac drives a node end to end', async () => {
  const node = await h.startNode();
  const seen = await runHvac('drive.py', node.apiAddr);
  expect(seen).toEqual({
    initialized_before: false,
    init_keys: 3,
    sealed_before_unseal: true,
    progress_after_one: 1,
    sealed_after_unseal: false,
    authenticated: true,
    mount_kv1: 'kv',
    mount_kv2_version: '2',
    mount_kv2_description: 'v2 store',
    kv1_read: { password: 'p1' },
    kv1_list: ['api', 'db'],
    kv1_deleted: true,
    kv2_versions: [1, 2],
    kv2_latest: { user: 'u', password: 'b' },
    kv2_v1: { user: 'u', password: 'a' },
    kv2_list: ['one', 'two'],
    kv2_deleted_time_set: true,
    kv2_list_after: ['one'],
    policy_read: 'path "kv2/data/svc/*" { capabilities = ["read"] }',
    policies: ['default', 'reader', 'root'],
    child_policies: ['default', 'reader'],
    lookup_meta: { app: 'hvac' },
    lookup_ttl_positive: true,
    renew_lease: 7200,
    renew_accessor_token: '',
    renew_self_lease: 600,
    reader_reads: { user: 'u', password: 'a' },
    reader_write_forbidden: true,
    revoked: ['bad token'],
    renew_revoked: ['token not found'],
    wrap_ttl: 60,
    unwrapped_has_token: true,
    unwrap_twice_refused: true,
    generic_list: ['db'],
    policies_top_keys: ['default', 'reader', 'root'],
    cubbyhole_read: { note: 'mine' },
    cubbyhole_list: ['hvac'],
    sealed_at_end: true,
  });
}, 60_000);
