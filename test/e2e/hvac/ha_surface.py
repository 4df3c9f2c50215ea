"""Vault's HA surface through Debian's python3-hvac, unmodified, on a standby of an HA pair.

Usage: python3 ha_surface.py http://127.0.0.1:PORT perf|sealed
  perf:   the node is a performance standby: health's codes and sys/leader's fields.
  sealed: the node is sealed: sys/leader's refusal as hvac raises it.
Prints one JSON object of observations; exits non-zero at the first failure.
"""
import json
import sys

import hvac

addr, phase = sys.argv[1], sys.argv[2]
out = {}
client = hvac.Client(url=addr)

if phase == "perf":
    health = client.sys.read_health_status(method="GET")
    out["health_status"] = health.status_code
    out["health_performance_standby"] = health.json()["performance_standby"]
    out["health_echo_duration_ms"] = health.json()["echo_duration_ms"]
    out["health_custom"] = client.sys.read_health_status(method="GET", performance_standby_code=299).status_code
    out["head_status"] = client.sys.read_health_status().status_code
    leader = client.sys.read_leader_status()
    out["leader"] = {k: leader[k] for k in ("ha_enabled", "is_self", "performance_standby", "last_wal")}
elif phase == "sealed":
    try:
        client.sys.read_leader_status()
        out["leader_error"] = None
    except hvac.exceptions.InternalServerError as e:
        out["leader_error"] = str(e)

print(json.dumps(out))
