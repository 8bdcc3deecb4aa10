#!/bin/sh
# rank_env.sh RANK NAME=VALUE... -- PROGRAM [ARGS...]: runs PROGRAM with the NAME=VALUE variables
# added on world rank RANK only (the launcher's rank variable: Open MPI's OMPI_COMM_WORLD_RANK,
# Hydra's PMI_RANK), for tests of settings that differ between ranks.
want=$1
shift
me=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-}}}
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ "$me" = "$want" ]; then export "$1"; fi
  shift
done
[ $# -gt 0 ] && shift
exec "$@"
