#!/usr/bin/env bash
# Slurm on the testbed: munged on the machine (its socket under /run is shared by every host, like a
# cluster's munge key), slurmctld on the head host, one slurmd per testbed host, from Debian's packages
# (slurmd slurmctld slurm-client munge). Jobs then start with srun from the head host, as on a cluster's
# login node, and Open MPI's ranks meet through PMIx (srun --mpi=pmix), with no mpirun.
#   slurm.sh up [HOSTS]     hosts h1..hHOSTS (default 2); brings the testbed up when it has fewer
#   slurm.sh srun ARGS...   srun on the head host, e.g. slurm.sh srun -N 2 --mpi=pmix build/bin/matex-topo
#   slurm.sh mpirun -np N PROGRAM...   srun -N min(N, hosts) -n N --mpi=pmix PROGRAM: an mpirun for tools
#   slurm.sh down           stops the daemons (the testbed stays up)
# Exit 77 (a skip) naming what is missing when Slurm or munge is not installed or no testbed can be made.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testbed=$here/testbed.sh
state=${MATEX_SLURM_STATE:-/tmp/matex-slurm}
conf=$state/slurm.conf

die() { echo "slurm.sh: $*" >&2; exit 1; }

write_config() {
  local count=$1 nodes=""
  mkdir -p "$state/ctld" "$state/log"
  {
    echo "# written by tests/cluster/slurm.sh"
    echo "ClusterName=testbed"
    echo "SlurmctldHost=head($("$testbed" launch hostname -I | awk '{print $1}'))"  # the testbed's head host
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$state/ctld"
    echo "SlurmdSpoolDir=$state/spool-%n"
    echo "SlurmctldPidFile=$state/slurmctld.pid"
    echo "SlurmdPidFile=$state/slurmd-%n.pid"
    echo "SlurmctldLogFile=$state/log/slurmctld.log"
    echo "SlurmdLogFile=$state/log/slurmd-%n.log"
    # No cgroups in the hosts' namespaces: processes are tracked by their parents, tasks not bound (each
    # host's slurmd runs inside its CPU set already).
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SwitchType=switch/none"
    echo "MpiDefault=pmix"
    echo "ReturnToService=2"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/linear"
    echo "SlurmdParameters=config_overrides"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "MinJobAge=30"
    local name addr cpus rest
    while read -r name addr cpus rest; do
      local n=${name#h}
      ((n <= count)) || continue
      echo "NodeName=$name NodeAddr=${addr} CPUs=2 State=UNKNOWN"
      nodes+=${nodes:+,}$name
    done < <("$testbed" status)
    echo "PartitionName=testbed Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } > "$conf"
  # Every host sees the machine's /tmp, where Slurm's PMIx plugin makes its per-step directories by step
  # id alone: each slurmd gets its own copy of the configuration, beside its own mpi.conf naming its own
  # directory (the copies are identical, so the daemons' configuration hashes agree).
  for ((n = 1; n <= count; ++n)); do
    mkdir -p "$state/conf-h$n" "$state/pmix-h$n" "$state/spool-h$n"
    cp "$conf" "$state/conf-h$n/slurm.conf"
    echo "PMIxCliTmpDirBase=$state/pmix-h$n" > "$state/conf-h$n/mpi.conf"
  done
}

start_munge() {
  pgrep -x munged > /dev/null && return
  [[ -s /etc/munge/munge.key ]] || { mungekey --create > /dev/null 2>&1 || create-munge-key -f > /dev/null; }
  chown munge: /etc/munge/munge.key 2>/dev/null || true
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge: /run/munge /var/log/munge /var/lib/munge
  runuser -u munge -- munged || die "munged did not start"
}

cmd_up() {
  local count=${1:-2}
  for program in slurmd slurmctld srun munged; do
    command -v "$program" > /dev/null || { echo "SKIP: $program is not installed (apt-get install slurmd slurmctld slurm-client munge)"; exit 77; }
  done
  if ! "$testbed" hosts 1 "$count" > /dev/null 2>&1; then
    "$testbed" up "$count" > /dev/null || exit $?
  fi
  cmd_down
  write_config "$count"
  start_munge
  "$testbed" launch env SLURM_CONF="$conf" slurmctld || die "slurmctld did not start (see $state/log/slurmctld.log)"
  local i
  for ((i = 1; i <= count; ++i)); do
    "$testbed" exec "h$i" env SLURM_CONF="$state/conf-h$i/slurm.conf" slurmd -N "h$i" || die "slurmd on h$i did not start (see $state/log/slurmd-h$i.log)"
  done
  for ((i = 0; i < 60; ++i)); do
    idle=$("$testbed" launch env SLURM_CONF="$conf" sinfo -h -t idle -o '%D' 2>/dev/null | sed -n 1p || true)
    [[ ${idle:-0} -ge $count ]] && { echo "slurm: $count nodes idle"; return; }
    sleep 0.5
  done
  "$testbed" launch env SLURM_CONF="$conf" sinfo -N -l >&2 || true
  die "the slurmds did not register within 30 s (logs: $state/log)"
}

# The testbed's Slurm processes only (their SLURM_CONF is under $state): a machine that also runs a real
# slurmd keeps it.
ours() {
  local pid
  for pid in $(pgrep -x "$1"); do
    grep -qz "^SLURM_CONF=$state/" "/proc/$pid/environ" 2>/dev/null && echo "$pid"
  done
  return 0
}

cmd_down() {
  local pid i
  for pid in $(ours slurmd) $(ours slurmctld) $(ours slurmstepd); do kill "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 50; ++i)); do
    [[ -z "$(ours slurmd)$(ours slurmctld)" ]] && break
    sleep 0.1
  done
  for pid in $(ours slurmd) $(ours slurmctld) $(ours slurmstepd); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$state"/spool-* "$state"/pmix-* "$state"/conf-h* "$state"/ctld "$state"/*.pid
}

cmd_srun() {
  [[ -f $conf ]] || die "Slurm is not up (slurm.sh up)"
  # The testbed's own Open MPI settings (testbed.sh mpirun-args: --mca NAME VALUE), given to the ranks
  # through the environment, which srun carries; mpirun's other options mean nothing to srun.
  local mca=() args i
  mapfile -t args < <("$testbed" mpirun-args)
  for ((i = 0; i < ${#args[@]}; ++i)); do
    [[ ${args[i]} == --mca ]] && { mca+=("OMPI_MCA_${args[i + 1]}=${args[i + 2]}"); i=$((i + 2)); }
  done
  exec "$testbed" launch env SLURM_CONF="$conf" "${mca[@]}" srun "$@"
}

# mpirun's words for srun's, for tools that take an mpirun (python -m matex.verify --mpirun, the bench
# scripts): -np N over as many hosts as the testbed has (at most N); --oversubscribe and --bind-to X
# dropped (each slurmd already runs inside its host's CPU set).
cmd_mpirun() {
  local ranks=""
  while (($#)); do
    case $1 in
      -np|-n) ranks=$2; shift 2 ;;
      --oversubscribe) shift ;;
      --bind-to) shift 2 ;;
      *) break ;;
    esac
  done
  [[ $ranks =~ ^[1-9][0-9]*$ ]] || die "mpirun: give -np N before the program"
  local hosts
  hosts=$(ls -d "$state"/conf-h* 2>/dev/null | wc -l)
  ((hosts > 0)) || die "Slurm is not up (slurm.sh up)"
  ((hosts <= ranks)) || hosts=$ranks
  cmd_srun -N "$hosts" -n "$ranks" --mpi=pmix "$@"
}

case ${1:-} in
  mpirun) shift; cmd_mpirun "$@" ;;
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  srun) shift; cmd_srun "$@" ;;
  *) echo "usage: slurm.sh up [HOSTS] | srun ARGS... | mpirun -np N PROGRAM... | down" >&2; exit 2 ;;
esac
