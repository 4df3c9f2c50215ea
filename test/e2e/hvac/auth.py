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

admin.sys.disable_auth_method(path="approle")
out["approle_token_revoked"] = not app.is_authenticated()

print(json.dumps(out))
