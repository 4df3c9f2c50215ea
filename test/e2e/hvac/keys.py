"""Rotation and rekey through Debian's python3-hvac, unmodified, on a fresh Tessera node.

Usage: python3 keys.py http://127.0.0.1:PORT
Prints one JSON object of observations; exits non-zero at the first failure.
"""
import json
import sys

import hvac

addr = sys.argv[1]
out = {}

client = hvac.Client(url=addr)
init = client.sys.initialize(secret_shares=3, secret_threshold=2)
client.sys.submit_unseal_keys(init["keys"][0:2])
client.token = init["root_token"]
client.sys.enable_secrets_engine(backend_type="kv", path="kv", options={"version": "1"})
client.write("kv/before", value="1")

status = client.sys.get_encryption_key_status()
out["term_before"] = status["data"]["term"] if "data" in status else status["term"]
out["rotate_status"] = client.sys.rotate_encryption_key().status_code
status = client.sys.get_encryption_key_status()
out["term_after"] = status["data"]["term"] if "data" in status else status["term"]
out["install_time_set"] = bool(status["install_time"])
client.write("kv/after", value="2")

started = client.sys.start_rekey(secret_shares=2, secret_threshold=2)
out["rekey_started"] = started["started"]
progress = client.sys.read_rekey_progress()
out["rekey_required"] = progress["required"]
nonce = progress["nonce"]
one = client.sys.rekey(init["keys"][0], nonce=nonce)
out["rekey_progress_one"] = one["progress"]
done = client.sys.rekey(init["keys"][1], nonce=nonce)
out["rekey_complete"] = done["complete"]
new_keys = done["keys"]
out["new_keys"] = len(new_keys)

client.sys.start_rekey(secret_shares=1, secret_threshold=1)
out["cancel_status"] = client.sys.cancel_rekey().status_code
out["started_after_cancel"] = client.sys.read_rekey_progress()["started"]

client.sys.seal()
client.sys.submit_unseal_keys(new_keys)
out["sealed_after_new_keys"] = client.sys.is_sealed()
out["reads"] = [client.read("kv/before")["data"]["value"], client.read("kv/after")["data"]["value"]]
print(json.dumps(out))
