#!/bin/sh
# MPI point-to-point semantics (tests/mpi/p2p_semantics) between two "nodes": the network
# namespaces of tests/netns/setup.sh, so every message between ranks 0 and 1 crosses a veth pair
# over TCP, as between two machines. MPIZip is preloaded with host compression forced on every
# message (MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0); the program checks every received byte.
# Runs: plain MPI as a check of the setup; MPIZip on 2 and 4 ranks (ob1 over TCP, and vader within
# a node); MPIZip on 2 ranks over UCX (TCP); and MPIZip on 2 ranks with the link limited to
# 1 Gbit/s. Skips (77) without root, namespaces, unshare or tc, or under another MPI than Open MPI.
. "$(dirname "$0")/../mpi/lib.sh"
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prog="$MPIZIP_BUILDDIR/tests/mpi/p2p_semantics"
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
for tool in ip tc unshare flock timeout; do
  command -v "$tool" > /dev/null || skip "no $tool"
done
[ "$mpizip_mpi" = openmpi ] || skip "tests/netns/agent is for Open MPI's launcher, not $mpizip_mpi's"
probe=mpz-probe-$$
ip netns add "$probe" 2> /dev/null || skip "cannot create network namespaces here"
ip netns delete "$probe"

# One job at a time on this machine uses the namespaces (the benchmark takes the same lock).
exec 9> /run/lock/mpizip-netns.lock
flock -w 600 9 || skip "the namespaces stayed busy for 10 minutes (another test or benchmark)"
out=$(mktemp)
# The namespaces go, whatever happens: on success, on failure, on interruption.
trap 'rm -f "$out"; "$here/setup.sh" teardown' EXIT
trap 'exit 1' HUP INT TERM
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Bytes that arrived at mpz-b's end of the link.
arrived_at_b() { ip netns exec mpz-b cat /sys/class/net/mpz-b0/statistics/rx_bytes; }

# netns_run WHAT [--pml P] NP MAX_BYTES: p2p_semantics on NP ranks across the nodes; WHAT is plain
# or mpizip (compression forced). MPIZip runs must show compressed messages received on mpz-b
# (rank 1), so the compressed path, not only the raw one, was taken; with 2 ranks, everything
# rank 1 received comes from the other node, so at least that many bytes must have arrived over
# the veth pair (UCX takes both namespaces for one machine, and shared memory between them would
# bypass the link).
netns_run() {
  what=$1
  shift
  pml=ob1
  if [ "$1" = --pml ]; then pml=$2; shift 2; fi
  np=$1 max=$2
  label="$what, $np ranks, pml $pml, link $link"
  start=$(date +%s)
  crossed=
  if [ "$what" = plain ]; then
    timeout -k 10 120 env MPIRUN_NETNS_BIN="$MPIRUN" "$here/mpirun.sh" --pml "$pml" -np "$np" \
      "$prog" "$max" > "$out" 2>&1 || { cat "$out"; fail "$label"; }
  else
    before=$(arrived_at_b)
    timeout -k 10 120 env MPIRUN_NETNS_BIN="$MPIRUN" MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 \
      MPIZIP_STATS=1 "$here/mpirun.sh" --pml "$pml" -np "$np" -x "LD_PRELOAD=$MPIZIP_LIB" \
      "$prog" "$max" > "$out" 2>&1 || { cat "$out"; fail "$label"; }
    arrived=$(($(arrived_at_b) - before))
    grep -q '^\[mpizip 1\] stats: .*received bf16 messages=[0-9]* compressed=[1-9]' "$out" ||
      { cat "$out"; fail "$label: no compressed bf16 message reached rank 1"; }
    if [ "$np" = 2 ]; then
      wire=$(grep '^\[mpizip 1\] stats: .*protocol:' "$out" |
        grep -o 'received [a-z0-9]* messages=[0-9]* compressed=[0-9]* bytes=[0-9]* wire=[0-9]*' |
        sed 's/.*wire=//' | awk '{ n += $1 } END { print n + 0 }')
      [ "$arrived" -ge "$wire" ] ||
        fail "$label: rank 1 received $wire payload bytes, but only $arrived arrived over the link"
      crossed="; rank 1 received $wire payload bytes, $arrived over the link"
    fi
  fi
  grep '^p2p_semantics: ok' "$out" | sed "s/\$/ [$label; $(($(date +%s) - start)) s$crossed]/"
}

link=unlimited
"$here/setup.sh"
netns_run plain 2 4000000
netns_run mpizip 2 16777216
netns_run mpizip 4 4000000
netns_run mpizip --pml ucx 2 4000000

link=1gbit
"$here/setup.sh" "$link"
netns_run mpizip 2 1000000
