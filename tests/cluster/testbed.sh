#!/usr/bin/env bash
# A cluster in a box: N "hosts" on this machine, each a set of Linux namespaces with its own hostname
# (UTS), network stack (a veth on a bridge, shaped with tc tbf), private /dev/shm (mount namespace),
# process ids (PID namespace, so that a CMA read of another host's process fails), and a disjoint CPU set.
# Jobs start with plain mpirun: `testbed.sh mpirun-args` prints the options that make mpirun start its
# daemons in the hosts (the rsh agent tests/cluster/enter_host.sh) and keep MPI's traffic on the bridge.
#
#   testbed.sh up N [RATE]     make hosts h1..hN (RATE: tc tbf rate of every link, e.g. 1gbit; default none)
#   testbed.sh down            remove everything, also what a run that died halfway left
#   testbed.sh check           exit 0 if this machine can make hosts, else 77 with the privilege missing
#   testbed.sh hosts [SLOTS] [COUNT]  the --host list of the first COUNT hosts (default all), e.g.
#                              10.77.0.11:2,10.77.0.12:2
#   testbed.sh mpirun-args     the mpirun options for the hosts (one per line)
#   testbed.sh shape HOST RATE shape HOST's link (RATE "none" removes the shaping)
#   testbed.sh link HOST up|down
#   testbed.sh exec HOST CMD.. run CMD inside HOST (its namespaces and CPU set)
#   testbed.sh launch CMD...   run CMD on the head host (where mpirun runs, as on a cluster's login node)
#   testbed.sh status          the hosts, their addresses, CPUs and link shaping
#
# Cost: up takes well under a second per host; nothing runs in the background except one sleeping
# shell per host (the holder and init of its PID namespace). Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN).
set -euo pipefail

STATE=/run/matex-testbed
BRIDGE=mxbr0
SUBNET_PREFIX=10.77.0
BRIDGE_ADDR=$SUBNET_PREFIX.1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "testbed: $*" >&2; exit 1; }
host_addr() { echo "$SUBNET_PREFIX.$((10 + ${1#h}))"; }
HEAD_ADDR=$SUBNET_PREFIX.10
HEAD_VETH=mxv0
# The head's TCP gives up on an unanswered peer after about 6 s (4 retransmissions; Linux's default, 15,
# takes about 15 minutes): mpirun then learns that a host whose link is down is gone, and ends.
HEAD_TCP_RETRIES=4
host_veth() { echo "mxv${1#h}"; }
host_names() { [[ -f $STATE/hosts ]] && awk '{print $1}' "$STATE/hosts" || true; }

# Why this machine cannot make hosts, or nothing.
missing_privilege() {
  [[ $(id -u) -eq 0 ]] || { echo "root (the testbed makes namespaces, veths and mounts)"; return; }
  unshare --net --uts --mount --pid --fork true 2>/dev/null \
    || { echo "CAP_SYS_ADMIN (unshare of network, UTS, mount and PID namespaces failed)"; return; }
  local probe
  probe=$(mktemp -d)
  if ! { mount --bind "$probe" "$probe" 2>/dev/null && umount "$probe"; }; then
    rmdir "$probe"; echo "CAP_SYS_ADMIN (mount --bind failed)"; return
  fi
  rmdir "$probe"
  if ! ip link add mxcheck0 type bridge 2>/dev/null; then
    echo "CAP_NET_ADMIN (ip link add of a bridge failed)"; return
  fi
  ip link del mxcheck0
  command -v tc >/dev/null || { echo "the tc tool (iproute2)"; return; }
  command -v nsenter >/dev/null || { echo "the nsenter tool (util-linux)"; return; }
}

cmd_check() {
  local why
  why=$(missing_privilege)
  if [[ -n $why ]]; then echo "SKIP: the cluster testbed needs $why"; exit 77; fi
  echo "ok: this machine can make testbed hosts"
}

cmd_down() {
  local name
  # Holders first: their PID namespace dies with them.
  for pidfile in "$STATE"/*/holder.pid; do
    [[ -f $pidfile ]] || continue
    kill -KILL "$(cat "$pidfile")" 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^mxv[0-9]+' | cut -d@ -f1); do
    ip link del "$link" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  if [[ -d $STATE ]]; then
    for name in "$STATE"/h* "$STATE"/head; do
      [[ -d $name ]] || continue
      for ns in mnt uts net; do umount "$name/$ns" 2>/dev/null || true; done
    done
    umount "$STATE" 2>/dev/null || true
    rm -rf "$STATE"
  fi
}

# Whether HOST reaches ADDR. No ping here: a TCP connect to a closed port is refused at once when the
# address answers; "no route to host" or no answer within 3 s means it does not.
reaches() {  # host addr
  local said
  said=$(nsenter --net="$STATE/$1/net" timeout 3 bash -c "exec 3<>/dev/tcp/$2/9" 2>&1) || [[ $said == *refused* ]]
}

# Shapes both directions of HOST's link (a real slow link is slow both ways): the bridge side of its veth
# carries what HOST receives, its eth0 what it sends.
shape_link() {  # host rate
  local name=$1 rate=$2 veth
  veth=$(host_veth "$1")
  if [[ $rate == none ]]; then
    tc qdisc del dev "$veth" root 2>/dev/null || true
    nsenter --net="$STATE/$name/net" tc qdisc del dev eth0 root 2>/dev/null || true
  else
    tc qdisc replace dev "$veth" root tbf rate "$rate" burst 256kb latency 5ms
    nsenter --net="$STATE/$name/net" tc qdisc replace dev eth0 root tbf rate "$rate" burst 256kb latency 5ms
  fi
}

cmd_up() {
  local count=${1:?"up needs the number of hosts"} rate=${2:-none}
  [[ $count =~ ^[1-9][0-9]?$ ]] || die "up: the number of hosts must be 1-99, not '$count'"
  local why
  why=$(missing_privilege)
  [[ -z $why ]] || { echo "SKIP: the cluster testbed needs $why"; exit 77; }
  cmd_down
  local cpus
  mapfile -t cpus < <(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | while IFS=- read -r a b; do
    seq "$a" "${b:-$a}"; done)
  ((${#cpus[@]} >= count)) || echo "testbed: warning: $count hosts on ${#cpus[@]} CPUs: hosts share CPUs" >&2

  mkdir -p "$STATE"
  # Namespace files live on a private bind mount, so that unshare may bind them there.
  mount --bind "$STATE" "$STATE"
  mount --make-private "$STATE"
  ip link add "$BRIDGE" type bridge
  ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  : > "$STATE/hosts"
  # Every host resolves every other's name, as on a cluster (its own /etc/hosts, bound in its mounts).
  { echo "127.0.0.1 localhost"; echo "$HEAD_ADDR head"
    for ((i = 1; i <= count; ++i)); do echo "$(host_addr "h$i") h$i"; done; } > "$STATE/etc-hosts"
  make_head

  local i name dir addr veth cpu
  for ((i = 1; i <= count; ++i)); do
    name=h$i dir=$STATE/h$i addr=$(host_addr "$name") veth=$(host_veth "$name")
    # This host's share of the CPUs: disjoint; with fewer CPUs than hosts, one CPU each, dealt in turn
    # (so that any run of consecutive hosts, up to the CPU count, is disjoint).
    if ((${#cpus[@]} >= count)); then
      local first=$(((i - 1) * ${#cpus[@]} / count)) last=$((i * ${#cpus[@]} / count - 1))
      cpu=$(IFS=,; echo "${cpus[*]:first:last - first + 1}")
    else
      cpu=${cpus[(i - 1) % ${#cpus[@]}]}
    fi
    mkdir -p "$dir"
    touch "$dir/net" "$dir/uts" "$dir/mnt"
    unshare --net="$dir/net" --uts="$dir/uts" --mount="$dir/mnt" --propagation private \
      sh -c "hostname $name && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && mount --bind $STATE/etc-hosts /etc/hosts"
    ip link add "$veth" type veth peer name eth0 netns "$dir/net"
    ip link set "$veth" master "$BRIDGE"
    ip link set "$veth" up
    nsenter --net="$dir/net" sh -c "ip link set lo up && ip addr add $addr/24 dev eth0 && ip link set eth0 up"
    shape_link "$name" "$rate"
    # The holder of the host's PID namespace: the agent enters it through this process. As the
    # namespace's init it also reaps the processes orphaned there (ranks whose daemon has gone). Its
    # /proc shows the host's processes only, as ps and kill inside a host expect.
    nsenter --net="$dir/net" --uts="$dir/uts" --mount="$dir/mnt" \
      unshare --pid --fork --kill-child --mount-proc taskset -c "$cpu" sh -c 'while :; do sleep 1000000 & wait; done' \
      </dev/null >/dev/null 2>&1 &
    local unshare_pid=$! holder="" tries
    for ((tries = 0; tries < 100; ++tries)); do
      holder=$(pgrep -P "$unshare_pid" -x sh || true)
      [[ -n $holder ]] && break
      sleep 0.05
    done
    [[ -n $holder ]] || die "up: the PID namespace holder of $name did not start"
    echo "$holder" > "$dir/holder.pid"
    echo "$name $addr $cpu $rate" >> "$STATE/hosts"
  done
  # Every host reaches every other before anyone uses them.
  for name in head $(host_names); do
    for other in $(host_names); do
      reaches "$name" "$(host_addr "$other")" || die "up: $name cannot reach $other ($(host_addr "$other"))"
    done
  done
  cmd_status
}

# The head host: its own network and hostname, where mpirun runs (testbed.sh launch); never shaped or cut.
make_head() {
  local dir=$STATE/head
  mkdir -p "$dir"
  touch "$dir/net" "$dir/uts"
  unshare --net="$dir/net" --uts="$dir/uts" sh -c "hostname head"
  ip link add "$HEAD_VETH" type veth peer name eth0 netns "$dir/net"
  ip link set "$HEAD_VETH" master "$BRIDGE"
  ip link set "$HEAD_VETH" up
  nsenter --net="$dir/net" sh -c "ip link set lo up && ip addr add $HEAD_ADDR/24 dev eth0 && ip link set eth0 up &&
    sysctl -qw net.ipv4.tcp_retries2=$HEAD_TCP_RETRIES"
}

cmd_launch() {
  [[ -f $STATE/head/net ]] || die "no testbed is up (testbed.sh up N)"
  exec nsenter --net="$STATE/head/net" --uts="$STATE/head/uts" -- "$@"
}

host_field() {  # host column
  [[ -f $STATE/hosts ]] || die "no testbed is up (testbed.sh up N)"
  awk -v h="$1" -v c="$2" '$1 == h || $2 == h {print $c; found=1} END {exit !found}' "$STATE/hosts" \
    || die "no testbed host '$1' (hosts: $(host_names | tr '\n' ' '))"
}

cmd_exec() {
  local name
  name=$(host_field "${1:?exec needs a host}" 1); shift
  local holder
  holder=$(cat "$STATE/$name/holder.pid")
  kill -0 "$holder" 2>/dev/null || die "host $name is gone (its PID namespace holder $holder has ended)"
  # The holder's namespaces; its CPU set through taskset (nsenter does not carry affinity).
  exec nsenter --target "$holder" --pid --net --uts --mount -- taskset -c "$(host_field "$name" 3)" "$@"
}

cmd_hosts() {
  local slots=${1:-1} count=${2:-0}
  [[ -f $STATE/hosts ]] || die "no testbed is up (testbed.sh up N)"
  local have
  have=$(wc -l < "$STATE/hosts")
  ((count <= have)) || die "hosts: $count hosts asked for, but the testbed has $have (testbed.sh up $count)"
  awk -v s="$slots" -v n="$count" 'n == 0 || NR <= n {printf "%s%s:%s", (NR > 1 ? "," : ""), $2, s} END {print ""}' \
    "$STATE/hosts"
}

cmd_mpirun_args() {
  [[ -f $STATE/hosts ]] || die "no testbed is up (testbed.sh up N)"
  printf '%s\n' --mca plm_rsh_agent "$HERE/enter_host.sh" \
    --mca oob_tcp_if_include "$SUBNET_PREFIX.0/24" --mca btl_tcp_if_include "$SUBNET_PREFIX.0/24" \
    --mca btl self,tcp --bind-to none
}

cmd_status() {
  [[ -f $STATE/hosts ]] || { echo "no testbed is up"; return; }
  local name addr cpu rate
  while read -r name addr cpu rate; do
    echo "$name $addr cpus=$cpu link=$(host_veth "$name") rate=$rate"
  done < "$STATE/hosts"
}

cmd_shape() {
  local name
  name=$(host_field "${1:?shape needs a host}" 1)
  shape_link "$name" "${2:?shape needs a rate, or none}"
  awk -v h="$name" -v r="$2" '$1 == h {$4 = r} {print}' "$STATE/hosts" > "$STATE/hosts.new"
  mv "$STATE/hosts.new" "$STATE/hosts"
}

cmd_link() {
  local name
  name=$(host_field "${1:?link needs a host}" 1)
  case ${2:-} in
    up|down) ip link set "$(host_veth "$name")" "$2" ;;
    *) die "link: say up or down, not '${2:-}'" ;;
  esac
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  check) cmd_check ;;
  hosts) shift; cmd_hosts "$@" ;;
  mpirun-args) cmd_mpirun_args ;;
  shape) shift; cmd_shape "$@" ;;
  link) shift; cmd_link "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  launch) shift; cmd_launch "$@" ;;
  status) cmd_status ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
