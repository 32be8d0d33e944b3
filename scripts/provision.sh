#!/usr/bin/env bash
# Installs the real services the tests start (ZooKeeper for cluster tests, MariaDB for the MySQL
# offset store) and the tools they check with (unzip, for retention's zip archives; chromium, for
# the dashboard's browser tests; jq, xxd and curl, for the README's tour) from
# Debian's packages when they are missing. Idempotent and quick when they are
# present. The test helpers start private instances on free loopback ports; nothing here starts
# a service. Without root or apt-get it says what is missing and the tests that need it fail
# with the same message.
set -euo pipefail

missing=()
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
[ -x /usr/bin/unzip ] || missing+=(unzip)
# The dashboard's browser tests drive Debian's chromium with playwright-core (no browser download).
[ -x /usr/bin/chromium ] || missing+=(chromium)
# The README's tour, run as written by test/docs/readme.int.test.ts, pipes into jq and xxd and calls curl.
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v xxd >/dev/null 2>&1 || missing+=(xxd)
command -v curl >/dev/null 2>&1 || missing+=(curl)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "provision: installing ${missing[*]} (Debian packages) for the integration tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The package may start a system MariaDB; tests run their own instance, so stop it.
  if command -v service >/dev/null 2>&1; then service mariadb stop >/dev/null 2>&1 || true; fi
else
  echo "provision: missing ${missing[*]}; install them with: sudo apt-get install -y ${missing[*]}" >&2
fi
