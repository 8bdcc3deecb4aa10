#!/bin/sh
# Two "nodes" on one machine: network namespaces mpz-a and mpz-b joined by a veth pair
# (10.77.0.1/24 in mpz-a, 10.77.0.2/24 in mpz-b), optionally rate-limited with a token bucket
# (tc tbf) on both ends, so that MPI traffic between them crosses a link of known speed.
#
# usage: setup.sh [RATE [BURST]]   create the namespaces (idempotent) and set the link's rate:
#                                  a tc rate such as 1gbit or 100mbit, or "none" (the default)
#                                  for no limit; BURST is the bucket size (default 256kb)
#        setup.sh teardown         remove the namespaces and their /etc/netns files
#
# Each namespace gets /etc/netns/NAME/hosts, which `ip netns exec` mounts over /etc/hosts inside
# it, so that the node names mpz-a and mpz-b resolve to their veth addresses there. The node name
# of a namespace is its own name (tests/netns/agent relies on this). Needs root.
set -eu

nodes="mpz-a mpz-b"
addr_mpz_a=10.77.0.1
addr_mpz_b=10.77.0.2
prefix=24

die() { echo "setup.sh: $*" >&2; exit 1; }

teardown() {
  for ns in $nodes; do
    # Deleting a namespace destroys its end of the veth pair, and with it the other end.
    if ip netns list | grep -qw "$ns"; then ip netns delete "$ns"; fi
    rm -rf "/etc/netns/$ns"
  done
  # /etc/netns itself goes too when nothing else uses it.
  rmdir /etc/netns 2> /dev/null || true
}

# The address of node $1.
addr_of() {
  case $1 in
    mpz-a) echo $addr_mpz_a ;;
    mpz-b) echo $addr_mpz_b ;;
  esac
}

setup() {
  rate=$1 burst=$2
  for ns in $nodes; do
    ip netns list | grep -qw "$ns" || ip netns add "$ns"
    ip -n "$ns" link set lo up
    mkdir -p "/etc/netns/$ns"
    { cat /etc/hosts; for n in $nodes; do echo "$(addr_of "$n") $n"; done; } \
      > "/etc/netns/$ns/hosts"
  done
  # The veth ends are named after their namespaces: mpz-a0 in mpz-a, mpz-b0 in mpz-b.
  if ! ip -n mpz-a link show mpz-a0 > /dev/null 2>&1; then
    ip link add mpz-a0 netns mpz-a type veth peer name mpz-b0 netns mpz-b
  fi
  for ns in $nodes; do
    ip -n "$ns" addr replace "$(addr_of "$ns")/$prefix" dev "${ns}0"
    ip -n "$ns" link set "${ns}0" up
    if [ "$rate" = none ]; then
      # No limit: remove a token bucket left by an earlier call, if there is one.
      if tc -n "$ns" qdisc show dev "${ns}0" | grep -q tbf; then
        tc -n "$ns" qdisc del dev "${ns}0" root
      fi
    else
      # Each end shapes what it sends, so each direction runs at RATE. The queue holds up to
      # 100 ms of traffic before tbf drops, enough for TCP to settle at the rate without losses
      # that would make the measured speed depend on loss recovery.
      tc -n "$ns" qdisc replace dev "${ns}0" root tbf rate "$rate" burst "$burst" latency 100ms
    fi
  done
  # The kernel reports a link that was just brought up as running (operstate "up") up to a second
  # later; until then UCX does not list it as a TCP device, and a job started at once finds no
  # route to the other node.
  for ns in $nodes; do
    tries=0
    until [ "$(ip netns exec "$ns" cat "/sys/class/net/${ns}0/operstate")" = up ]; do
      tries=$((tries + 1))
      [ $tries -le 50 ] || die "${ns}0 is not up after 5 seconds"
      sleep 0.1
    done
  done
}

[ "$(id -u)" = 0 ] || die "needs root"
case ${1:-none} in
  teardown) teardown ;;
  -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) setup "${1:-none}" "${2:-256kb}" ;;
esac
