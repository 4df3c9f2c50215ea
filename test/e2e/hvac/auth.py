"""Logs in to a fresh, uninitialised Tessera node through Debian's python3-hvac, unmodified:
userpass and approle, enabled, configured and used exactly as hvac sends them.

Usage: python3 auth.py http://127.0.0.1:PORT
Prints one JSON object of observations on stdout for the jest test to check; exits non-zero at
the first failure (the traceback names the step and the server's answer).
"""
import json
import sys

import hvac

addr = sys.argv[1]
out = {}

admin = hvac.Client(url=addr)
init = admin.sys.initialize(secret_shares=1, secret_threshold=1)
admin.sys.submit_unseal_key(init["keys"][0])
admin.token = init["root_token"]

admin.sys.enable_secrets_engine(backend_type="kv", path="kv", options={"version": "2"})
admin.secrets.kv.v2.create_or_update_secret(path="app/db", secret={"password": "db-pw"}, mount_point="kv")
admin.sys.create_or_update_policy(name="app", policy='path "kv/data/app/*" { capabilities = ["read"] }')

admin.sys.enable_auth_method(method_type="userpass", description="people")
admin.sys.enable_auth_method(method_type="approle")
methods = admin.sys.list_auth_methods()
table = methods.get("data", methods)
out["methods"] = sorted(k for k in table if k.endswith("/"))
out["userpass_description"] = table["userpass/"]["description"]

# userpass
admin.auth.userpass.create_or_update_user(username="alice", password="alice-pw", policies="app")
out["users"] = admin.auth.userpass.list_user()["data"]["keys"]
out["user_has_password"] = "password" in json.dumps(admin.auth.userpass.read_user(username="alice"))
person = hvac.Client(url=addr)
login = person.auth.userpass.login(username="alice", password="alice-pw")
out["userpass_policies"] = login["auth"]["policies"]
out["userpass_authenticated"] = person.is_authenticated()
out["userpass_reads"] = person.secrets.kv.v2.read_secret_version(path="app/db", mount_point="kv")["data"]["data"]
try:
    hvac.Client(url=addr).auth.userpass.login(username="alice", password="wrong")
    out["userpass_wrong_refused"] = False
except hvac.exceptions.InvalidRequest as e:
    out["userpass_wrong_refused"] = "invalid username or password" in str(e)

# approle
admin.auth.approle.create_or_update_approle(role_name="web", token_policies=["app"], token_ttl="20m", secret_id_num_uses=1)
out["roles"] = admin.auth.approle.list_roles()["data"]["keys"]
role_id = admin.auth.approle.read_role_id(role_name="web")["data"]["role_id"]
secret = admin.auth.approle.generate_secret_id(role_name="web", metadata={"team": "blue"})["data"]
out["secret_id_num_uses"] = secret["secret_id_num_uses"]
app = hvac.Client(url=addr)
login = app.auth.approle.login(role_id=role_id, secret_id=secret["secret_id"])
out["approle_metadata"] = login["auth"]["metadata"]
out["approle_lease"] = login["auth"]["lease_duration"]
out["approle_authenticated"] = app.is_authenticated()
out["approle_reads"] = app.secrets.kv.v2.read_secret_version(path="app/db", mount_point="kv")["data"]["data"]
try:
    hvac.Client(url=addr).auth.approle.login(role_id=role_id, secret_id=secret["secret_id"])
    out["approle_second_refused"] = False
except hvac.exceptions.InvalidRequest as e:
    out["approle_second_refused"] = "invalid role or secret ID" in str(e)

# approle secret IDs (issue 27): custom, lookups, destroys, and the empty list's 404
approle = admin.auth.approle
approle.create_or_update_approle(role_name="svc", token_policies=["app"])
svc_role_id = approle.read_role_id(role_name="svc")["data"]["role_id"]
try:
    approle.list_secret_id_accessors(role_name="svc")
    out["empty_accessors"] = "listed"
except hvac.exceptions.InvalidPath:
    out["empty_accessors"] = "InvalidPath"
custom = approle.create_custom_secret_id(role_name="svc", secret_id="svc-own-secret", metadata={"team": "green"})["data"]
out["custom_secret_id"] = custom["secret_id"]
try:
    approle.create_custom_secret_id(role_name="svc", secret_id="svc-own-secret")
    out["custom_duplicate"] = "accepted"
except hvac.exceptions.InvalidRequest as e:
    # hvac parses `errors` only under a bare "application/json", the type Vault (and Tessera) send.
    out["custom_duplicate"] = e.errors
looked = approle.read_secret_id(role_name="svc", secret_id="svc-own-secret")["data"]
out["lookup_fields"] = sorted(looked)
out["lookup_metadata"] = looked["metadata"]
out["lookup_shows_secret"] = "svc-own-secret" in json.dumps(looked)
out["accessor_lookup_same"] = approle.read_secret_id_accessor(role_name="svc", secret_id_accessor=custom["secret_id_accessor"])["data"] == looked
generated = approle.generate_secret_id(role_name="svc")["data"]
out["accessors"] = sorted(approle.list_secret_id_accessors(role_name="svc")["data"]["keys"]) == sorted([custom["secret_id_accessor"], generated["secret_id_accessor"]])
out["custom_login"] = "client_token" in hvac.Client(url=addr).auth.approle.login(role_id=svc_role_id, secret_id="svc-own-secret")["auth"]
out["destroy_status"] = approle.destroy_secret_id(role_name="svc", secret_id=generated["secret_id"]).status_code
try:
    hvac.Client(url=addr).auth.approle.login(role_id=svc_role_id, secret_id=generated["secret_id"])
    out["destroyed_login_refused"] = False
except hvac.exceptions.InvalidRequest:
    out["destroyed_login_refused"] = True
out["unknown_lookup_status"] = approle.read_secret_id(role_name="svc", secret_id=generated["secret_id"]).status_code
out["destroy_accessor_status"] = approle.destroy_secret_id_accessor(role_name="svc", secret_id_accessor=custom["secret_id_accessor"]).status_code
try:
    approle.read_secret_id_accessor(role_name="svc", secret_id_accessor=custom["secret_id_accessor"])
    out["gone_accessor"] = "found"
except hvac.exceptions.InvalidPath as e:
    out["gone_accessor"] = json.loads(e.args[0])["data"]
try:
    approle.list_secret_id_accessors(role_name="svc")
    out["emptied_accessors"] = "listed"
except hvac.exceptions.InvalidPath:
    out["emptied_accessors"] = "InvalidPath"

# a read of a soft-deleted KV v2 version (issue 27): Vault's 404 with the version's metadata
kv2 = admin.secrets.kv.v2
kv2.create_or_update_secret(path="app/gone", secret={"v": "1"}, mount_point="kv")
kv2.delete_latest_version_of_secret(path="app/gone", mount_point="kv")
try:
    kv2.read_secret_version(path="app/gone", mount_point="kv")
    out["deleted_read"] = "read"
except hvac.exceptions.InvalidPath as e:
    body = json.loads(e.args[0])
    meta = body["data"]["metadata"]
    out["deleted_read"] = {"data": body["data"]["data"], "version": meta["version"], "destroyed": meta["destroyed"], "has_deletion_time": meta["deletion_time"] != "", "errors": body.get("errors")}

admin.sys.disable_auth_method(path="approle")
out["approle_token_revoked"] = not app.is_authenticated()

print(json.dumps(out))
