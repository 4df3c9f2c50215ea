"""Audit devices through Debian's python3-hvac, unmodified, on a running dev node.

Usage: python3 audit.py http://127.0.0.1:PORT TOKEN
Enables a file device at hv/ (file hv.log in the node's audit directory), lists it, writes one
KV v2 secret, hashes its value with the device's salt, disables the device, and prints one JSON
object of observations.
"""
import json
import sys

import hvac

addr, token = sys.argv[1], sys.argv[2]
out = {}
client = hvac.Client(url=addr, token=token)
client.sys.enable_audit_device("file", description="hvac device", options={"file_path": "hv.log"}, path="hv")
listed = client.sys.list_enabled_audit_devices()
out["listed"] = listed["data"]["hv/"]
out["listed_top"] = listed["hv/"]["type"]
client.secrets.kv.v2.create_or_update_secret(path="hvac-audit", secret={"pw": "hvac-secret-value-7"})
out["hash"] = client.sys.calculate_hash(path="hv", input_to_hash="hvac-secret-value-7")["data"]["hash"]
client.sys.disable_audit_device(path="hv")
out["after_disable"] = sorted(client.sys.list_enabled_audit_devices()["data"].keys())
print(json.dumps(out))
