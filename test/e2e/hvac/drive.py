"""Drives a fresh, uninitialised Tessera node through Debian's python3-hvac, unmodified.

Usage: python3 drive.py http://127.0.0.1:PORT
Each step asserts what a Vault server would answer; the script prints one JSON object of
observations on stdout for the jest test to check, and exits non-zero at the first failure
(the traceback names the step and the server's answer).
"""
import json
import sys

import hvac

addr = sys.argv[1]
out = {}

client = hvac.Client(url=addr)
out["initialized_before"] = client.sys.is_initialized()
init = client.sys.initialize(secret_shares=3, secret_threshold=2)
out["init_keys"] = len(init["keys"])
root = init["root_token"]
status = client.sys.read_seal_status()
out["sealed_before_unseal"] = status["sealed"]
client.sys.submit_unseal_key(init["keys"][0])
progress = client.sys.read_seal_status()
out["progress_after_one"] = progress["progress"]
client.sys.submit_unseal_keys(init["keys"][1:3])
out["sealed_after_unseal"] = client.sys.is_sealed()
client.token = root
out["authenticated"] = client.is_authenticated()

# Mounts: hvac sends description/config/plugin_name/local/seal_wrap as null or defaults.
client.sys.enable_secrets_engine(backend_type="kv", path="kv1", options={"version": "1"})
client.sys.enable_secrets_engine(backend_type="kv", path="kv2", options={"version": "2"}, description="v2 store")
mounts = client.sys.list_mounted_secrets_engines()
table = mounts.get("data", mounts)
out["mount_kv1"] = table["kv1/"]["type"]
out["mount_kv2_version"] = table["kv2/"]["options"]["version"]
out["mount_kv2_description"] = table["kv2/"]["description"]

# KV v1
kv1 = client.secrets.kv.v1
kv1.create_or_update_secret(path="app/db", secret={"password": "p1"}, mount_point="kv1")
kv1.create_or_update_secret(path="app/api", secret={"key": "k1"}, mount_point="kv1")
out["kv1_read"] = kv1.read_secret(path="app/db", mount_point="kv1")["data"]
out["kv1_list"] = sorted(kv1.list_secrets(path="app", mount_point="kv1")["data"]["keys"])
kv1.delete_secret(path="app/api", mount_point="kv1")
try:
    kv1.read_secret(path="app/api", mount_point="kv1")
    out["kv1_deleted"] = False
except hvac.exceptions.InvalidPath:
    out["kv1_deleted"] = True

# KV v2
kv2 = client.secrets.kv.v2
w1 = kv2.create_or_update_secret(path="svc/one", secret={"user": "u", "password": "a"}, mount_point="kv2")
w2 = kv2.create_or_update_secret(path="svc/one", secret={"user": "u", "password": "b"}, mount_point="kv2", cas=1)
out["kv2_versions"] = [w1["data"]["version"], w2["data"]["version"]]
latest = kv2.read_secret_version(path="svc/one", mount_point="kv2")
out["kv2_latest"] = latest["data"]["data"]
out["kv2_v1"] = kv2.read_secret_version(path="svc/one", version=1, mount_point="kv2")["data"]["data"]
kv2.create_or_update_secret(path="svc/two", secret={"x": "y"}, mount_point="kv2")
out["kv2_list"] = sorted(kv2.list_secrets(path="svc", mount_point="kv2")["data"]["keys"])
kv2.delete_latest_version_of_secret(path="svc/one", mount_point="kv2")
meta = kv2.read_secret_metadata(path="svc/one", mount_point="kv2")
out["kv2_deleted_time_set"] = meta["data"]["versions"]["2"]["deletion_time"] != ""
kv2.delete_metadata_and_all_versions(path="svc/two", mount_point="kv2")
out["kv2_list_after"] = sorted(kv2.list_secrets(path="svc", mount_point="kv2")["data"]["keys"])

# Policies
policy = 'path "kv2/data/svc/*" { capabilities = ["read"] }'
client.sys.create_or_update_policy(name="reader", policy=policy)
out["policy_read"] = client.sys.read_policy(name="reader")["data"]["rules"]
out["policies"] = sorted(client.sys.list_policies()["data"]["policies"])

# Tokens
created = client.auth.token.create(policies=["reader"], ttl="1h", meta={"app": "hvac"})
child = created["auth"]["client_token"]
out["child_policies"] = sorted(created["auth"]["policies"])
looked = client.auth.token.lookup(child)
out["lookup_meta"] = looked["data"]["meta"]
out["lookup_ttl_positive"] = looked["data"]["ttl"] > 0
# Renewal (issue 27): renew by token and by accessor, and renew-self as the child.
out["renew_lease"] = client.auth.token.renew(child, increment="2h")["auth"]["lease_duration"]
out["renew_accessor_token"] = client.auth.token.renew_accessor(created["auth"]["accessor"], increment="30m")["auth"]["client_token"]
out["renew_self_lease"] = hvac.Client(url=addr, token=child).auth.token.renew_self(increment=600)["auth"]["lease_duration"]
reader = hvac.Client(url=addr, token=child)
out["reader_reads"] = reader.secrets.kv.v2.read_secret_version(path="svc/one", version=1, mount_point="kv2")["data"]["data"]
try:
    reader.secrets.kv.v2.create_or_update_secret(path="svc/one", secret={"no": "pe"}, mount_point="kv2")
    out["reader_write_forbidden"] = False
except hvac.exceptions.Forbidden:
    out["reader_write_forbidden"] = True
client.auth.token.revoke(child)
try:
    client.auth.token.lookup(child)
    out["revoked"] = False
except hvac.exceptions.Forbidden as e:
    out["revoked"] = e.errors
try:
    client.auth.token.renew(child)
    out["renew_revoked"] = "renewed"
except hvac.exceptions.InvalidRequest as e:
    out["renew_revoked"] = e.errors

# Wrapping: a wrapped token create, then unwrap with the wrapping token.
wrapped = client.auth.token.create(policies=["reader"], ttl="10m", wrap_ttl="60s")
wrap_token = wrapped["wrap_info"]["token"]
out["wrap_ttl"] = wrapped["wrap_info"]["ttl"]
unwrapper = hvac.Client(url=addr, token=wrap_token)
unwrapped = unwrapper.sys.unwrap()
out["unwrapped_has_token"] = unwrapped["auth"]["client_token"].startswith("hvs.")
try:
    hvac.Client(url=addr, token=wrap_token).sys.unwrap()
    out["unwrap_twice_refused"] = False
except (hvac.exceptions.InvalidRequest, hvac.exceptions.Forbidden):
    out["unwrap_twice_refused"] = True

# Issue 27: hvac's generic list() (sends ?list=True), the top-level keys old clients read, cubbyhole
out["generic_list"] = client.list("kv1/app")["data"]["keys"]
out["policies_top_keys"] = sorted(client.sys.list_policies()["keys"])
client.write("cubbyhole/hvac", note="mine")
out["cubbyhole_read"] = client.read("cubbyhole/hvac")["data"]
out["cubbyhole_list"] = client.list("cubbyhole")["data"]["keys"]

# Seal
client.sys.seal()
out["sealed_at_end"] = client.sys.is_sealed()
print(json.dumps(out))
