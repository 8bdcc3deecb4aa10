#!/bin/sh
# mpirun across the two namespace "nodes" of tests/netns/setup.sh (which must have run): Open MPI's
# mpirun starts in mpz-a under the hostname mpz-a and launches mpz-b's daemon through
# tests/netns/agent. Ranks go round-robin over the nodes (--map-by node): with 2 ranks, one per
# node; with 4, ranks 0 and 2 on mpz-a, 1 and 3 on mpz-b.
#
# usage: mpirun.sh [--pml ob1|ucx] MPIRUN_ARGUMENTS...
#   e.g. mpirun.sh -np 4 -x LD_PRELOAD=.libs/libmpizip.so tests/mpi/p2p_semantics 4000000
#        MPIRUN="tests/netns/mpirun.sh --pml ucx" osu-bench/compare -- osu_bw ...
#
#   --pml ob1   (default) Open MPI's ob1 with the TCP transport between the nodes and shared
#               memory (vader) within one
#   --pml ucx   UCX: UCX_TLS=tcp,self,sm unless UCX_TLS is set
#
# Environment: LD_PRELOAD and every MPIZIP_* and UCX_* variable reach the ranks of both nodes
# (with -x); LD_PRELOAD is taken off mpirun itself. MPIRUN_NETNS_BIN is the mpirun to start
# (default mpirun). Open MPI only.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
pml=ob1
if [ "${1:-}" = --pml ]; then
  pml=${2:?--pml takes ob1 or ucx}
  shift 2
fi

# Only the veth subnet: the daemons' control channel and the MPI traffic must cross the veth
# pair, never loopback. Open MPI takes the CIDR form here (not only interface names, which
# differ between the nodes).
subnet=10.77.0.0/24
# Both nodes share this machine's few cores, so ranks waiting for a message yield the core
# (mpi_yield_when_idle) rather than spin: spinning ranks starve the ones with work to do, and the
# kernel's TCP processing, which here is the "network".
set -- --mca plm_rsh_agent "$here/agent" --hostfile "$here/hostfile" --map-by node \
  --oversubscribe --mca mpi_yield_when_idle 1 --mca oob_tcp_if_include "$subnet" "$@"
case $pml in
  ob1)
    # CMA (the single-copy mechanism of vader) is not permitted in every container.
    set -- --mca pml ob1 --mca btl tcp,vader,self --mca btl_tcp_if_include "$subnet" \
      --mca btl_vader_single_copy_mechanism none "$@"
    ;;
  ucx)
    # Open MPI's pml ucx refuses TCP-only UCX unless told any transport and device will do.
    export UCX_TLS="${UCX_TLS:-tcp,self,sm}"
    set -- --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self \
      --mca osc ^ucx "$@"
    ;;
  *) echo "mpirun.sh: --pml takes ob1 or ucx, not $pml" >&2; exit 2 ;;
esac
[ "$(id -u)" != 0 ] || set -- --allow-run-as-root "$@"

if [ -n "${LD_PRELOAD:-}" ]; then
  set -- -x "LD_PRELOAD=$LD_PRELOAD" "$@"
  unset LD_PRELOAD
fi
for name in $(env | sed -n 's/^\(\(MPIZIP\|UCX\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
  set -- -x "$name" "$@"
done

exec ip netns exec mpz-a unshare --uts sh -c 'hostname mpz-a && exec "$@"' sh \
  "${MPIRUN_NETNS_BIN:-mpirun}" "$@"
