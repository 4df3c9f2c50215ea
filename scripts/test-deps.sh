#!/usr/bin/env bash
# Debian packages the test suite needs beyond npm: python3-hvac (the second real Vault client,
# test/e2e/hvac*.test.ts) and postgresql-15 (the private PostgreSQL of the PostgreSQL storage
# tests, test/support/postgres.ts). Installed with apt when missing and we are root; otherwise a
# clear message says what to install. `.ci/run` installs the same packages explicitly.
set -euo pipefail
missing=()
/usr/bin/python3 -c 'import hvac' 2>/dev/null || missing+=(python3-hvac)
[ -x /usr/lib/postgresql/15/bin/postgres ] || missing+=(postgresql-15)
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
  exit 0
fi
echo "test-deps: the test suite needs Debian's ${missing[*]}: sudo apt-get install -y ${missing[*]}" >&2
exit 1
