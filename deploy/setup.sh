#!/bin/sh
# One-shot setup of the compose topology (the `setup` service in docker-compose.yml): a dev
# license in the license volume unless one is there, then each node's tessera.hcl with the
# license issuer key filled in. Re-running it keeps the license and rewrites the configs.
# To use a license from your issuer, put its license.json and issuer.pub in the volume first.
set -eu
if [ ! -f /license/license.json ] || [ ! -f /license/issuer.pub ]; then
  tessera license dev -out /license
fi
key=$(tr -d '\n' < /license/issuer.pub)
for node in primary dr-secondary perf-secondary; do
  sed "s|@LICENSE_ISSUER_KEY@|${key}|" "/deploy/${node}.hcl" > "/out/${node}/tessera.hcl"
done
# Nothing here is secret (a signed license, a public key, configs); the nodes run as uid 1000.
chmod -R a+rX /license /out
echo "setup: license in the license volume; configs written for primary, dr-secondary and perf-secondary"
