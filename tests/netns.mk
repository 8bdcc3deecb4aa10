# Two "nodes" on one machine: network namespaces joined by a veth pair (tests/netns/setup.sh), with
# Open MPI launched across them (tests/netns/mpirun.sh, tests/netns/agent). The test needs root and
# skips without it; osu-bench/netns_bench.sh measures MPIZip against plain MPI over the same link.
TESTS += tests/netns/netns.sh
EXTRA_DIST += tests/netns/netns.sh tests/netns/setup.sh tests/netns/agent tests/netns/mpirun.sh \
	tests/netns/hostfile osu-bench/netns_bench.sh
