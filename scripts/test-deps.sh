#!/usr/bin/env bash
# Debian packages the test suite needs beyond npm: python3-hvac (the second real Vault client,
# test/e2e/hvac*.test.ts). Installed with apt when missing and we are root; otherwise a clear
# message says what to install. `.ci/run` installs the same packages explicitly.
set -euo pipefail
if /usr/bin/python3 -c 'import hvac' 2>/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq python3-hvac
  exit 0
fi
echo "test-deps: the e2e suite needs Debian's python3-hvac: sudo apt-get install -y python3-hvac" >&2
exit 1
