"""Transit through Debian's python3-hvac, unmodified, on a fresh Tessera node.

Usage: python3 transit.py http://127.0.0.1:PORT
Prints one JSON object of observations; exits non-zero at the first failure.
"""
import base64
import json
import sys

import hvac

addr = sys.argv[1]
out = {}
b64 = lambda s: base64.b64encode(s.encode()).decode()

client = hvac.Client(url=addr)
init = client.sys.initialize(secret_shares=1, secret_threshold=1)
client.sys.submit_unseal_keys(init["keys"])
client.token = init["root_token"]
client.sys.enable_secrets_engine(backend_type="transit", path="transit")
transit = client.secrets.transit

transit.create_key(name="app", exportable=True, allow_plaintext_backup=True)
out["key_type"] = transit.read_key(name="app")["data"]["type"]
out["keys"] = transit.list_keys()["data"]["keys"]

ct = transit.encrypt_data(name="app", plaintext=b64("hvac plaintext"))["data"]["ciphertext"]
out["ciphertext_prefix"] = ct[:9]
out["decrypted"] = base64.b64decode(transit.decrypt_data(name="app", ciphertext=ct)["data"]["plaintext"]).decode()

transit.rotate_key(name="app")
out["latest_version"] = transit.read_key(name="app")["data"]["latest_version"]
rewrapped = transit.rewrap_data(name="app", ciphertext=ct)["data"]["ciphertext"]
out["rewrapped_prefix"] = rewrapped[:9]

batch = transit.encrypt_data(name="app", plaintext="", batch_input=[{"plaintext": b64("a")}, {"plaintext": b64("b")}])
out["batch_count"] = len(batch["data"]["batch_results"])

derived = transit.encrypt_data(name="per-user", plaintext=b64("x"), context=b64("user-1"))["data"]["ciphertext"]
out["derived_roundtrip"] = base64.b64decode(
    transit.decrypt_data(name="per-user", ciphertext=derived, context=b64("user-1"))["data"]["plaintext"]).decode()

dk = transit.generate_data_key(name="app", key_type="plaintext", bits=256)["data"]
out["datakey_bytes"] = len(base64.b64decode(dk["plaintext"]))

mac = transit.generate_hmac(name="app", hash_input=b64("data"), algorithm="sha2-512")["data"]["hmac"]
out["hmac_prefix"] = mac[:9]
out["hmac_valid"] = transit.verify_signed_data(name="app", hash_input=b64("data"), hmac=mac, hash_algorithm="sha2-512")["data"]["valid"]

out["hash"] = transit.hash_data(hash_input=b64("abc"), algorithm="sha2-256", output_format="hex")["data"]["sum"]
out["random_len"] = len(base64.b64decode(transit.generate_random_bytes(n_bytes=24)["data"]["random_bytes"]))

out["export_versions"] = sorted(transit.export_key(name="app", key_type="encryption-key")["data"]["keys"].keys())

backup = transit.backup_key(name="app")["data"]["backup"]
transit.restore_key(backup=backup, name="app-restored")
out["restored_decrypts"] = base64.b64decode(transit.decrypt_data(name="app-restored", ciphertext=ct)["data"]["plaintext"]).decode()

transit.update_key_configuration(name="app", min_decryption_version=2, deletion_allowed=True)
# hvac checks min_encryption_version > min_decryption_version client-side when both are given.
transit.update_key_configuration(name="app", min_encryption_version=2)
try:
    transit.decrypt_data(name="app", ciphertext=ct)
    out["old_refused"] = False
except hvac.exceptions.InvalidRequest as e:
    out["old_refused"] = str(e).startswith("ciphertext or signature version is disallowed by policy (too old)")
out["trim_min"] = transit.trim_key(name="app", min_version=2)["data"]["min_available_version"]
transit.delete_key(name="app")
try:
    transit.read_key(name="app")
    out["deleted"] = False
except hvac.exceptions.InvalidPath:
    out["deleted"] = True

out["root_token"] = init["root_token"]
print(json.dumps(out))
