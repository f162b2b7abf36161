#!/usr/bin/env bash
# Runs COMMAND when the testbed has at least COUNT hosts up; else exits 77 (a skip) saying why.
#   require_hosts.sh COUNT COMMAND [ARGS...]
testbed=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/testbed.sh
count=${1:?"require_hosts.sh: give the number of hosts"}
shift
if ! "$testbed" hosts 1 "$count" > /dev/null 2>&1; then
  why=$("$testbed" check | sed 's/^SKIP: //')
  [[ $why == ok:* ]] && why="no testbed of $count hosts is up (the fixture cluster.up failed: see its output)"
  echo "SKIP: $why"
  exit 77
fi
exec "$@"
