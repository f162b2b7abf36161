#!/usr/bin/env bash
# Open MPI's rsh agent for the testbed (plm_rsh_agent): called as `enter_host.sh HOST COMMAND...`, as ssh
# would be, it runs COMMAND inside the testbed host HOST (an address or a name from testbed.sh's list),
# in its namespaces and on its CPUs. The environment passes through, as on a cluster with a shared home.
set -euo pipefail
host=${1:?"enter_host.sh: no host given"}
shift
# Open MPI may put ssh-style options before the host; none take a value here.
while [[ $host == -* ]]; do host=${1:?"enter_host.sh: no host given"}; shift; done
exec "$(dirname "${BASH_SOURCE[0]}")/testbed.sh" exec "$host" sh -c "$*"
