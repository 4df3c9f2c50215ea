#!/bin/sh
# One-shot setup of the compose cluster (the `setup` service in docker-compose.yml): a dev license
# in the license volume unless one is there, then every node's config in the config volume
# (mounted at /out): <name>.hcl for each name in PRIMARY_NODES (space-separated; "primary" unless
# set) from primary.hcl, with the node's name as its host in api_addr and cluster_addr and
# the PostgreSQL password in its connection_url, and dr-secondary.hcl and perf-secondary.hcl.
# The password is the one the postgres service chose at its first start (generated unless
# TESSERA_PG_PASSWORD was set then), read from the pg-client volume (mounted at /pg).
# Re-running it keeps the license and rewrites the configs.
# To use a license from your issuer, put its license.json and issuer.pub in the volume first.
set -eu
if [ ! -f /license/license.json ] || [ ! -f /license/issuer.pub ]; then
  tessera license dev -out /license
fi
key=$(tr -d '\n' < /license/issuer.pub)
if [ ! -s /pg/password ] || [ ! -s /pg/ca.crt ]; then
  echo "setup: the postgres service has not written its password and CA certificate into the pg-client volume" >&2
  exit 1
fi
password=$(tr -d '\n' < /pg/password)
case $password in '' | *[!A-Za-z0-9]*) echo "setup: the PostgreSQL password in the pg-client volume is not letters and digits" >&2; exit 1 ;; esac
primaries=${PRIMARY_NODES:-primary}
for node in $primaries; do
  sed -e "s|@LICENSE_ISSUER_KEY@|${key}|" -e "s|@NODE@|${node}|g" -e "s|@PG_PASSWORD@|${password}|" \
    /deploy/primary.hcl > "/out/${node}.hcl"
done
for node in dr-secondary perf-secondary; do
  sed "s|@LICENSE_ISSUER_KEY@|${key}|" "/deploy/${node}.hcl" > "/out/${node}.hcl"
done
# The nodes run as uid 1000. The license and public key are not secret; the primary configs hold
# the PostgreSQL password, so the configs are readable by that uid only.
chmod -R a+rX /license
chown -R 1000:1000 /out
chmod 0700 /out
chmod 0600 /out/*.hcl
echo "setup: license in the license volume; configs written for ${primaries} dr-secondary perf-secondary"
