#!/bin/sh
# When compressing pays (cost/model.h), within one job (tests/mpi/when_to_compress.c): host
# compression over the emulated link, two communicators whose links differ by their hint
# mpizip_emu_gbps. From the sender's statistics: at the default, the cost model compresses the 6
# smooth messages on the 0.02 GB/s link and none of the 6 on the 20 GB/s one, and the random
# stream on the slow link is compressed once (its first try), then found incompressible and sent
# raw; MPIZIP_COMPRESS=always compresses every message (the model not asked), never none. Every
# message arrives exact. Then the two-shot's allreduce under the model (below).
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/when_to_compress"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
base="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_TRANSPORT=emulated MPIZIP_FORCE_INTERNODE=1 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1"
run() {
  MPIZIP_TEST_ENV="$base $1" timeout -k 10 120 sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip 2 '$prog'" \
    >"$out" 2>&1 || { cat "$out"; fail "$1: exit (a hang times out)"; }
  grep -q "when_to_compress: 0 messages differ" "$out" || { cat "$out"; fail "$1: data"; }
}
expect() {  # expect COMM PATTERN WHAT
  grep "\[mpizip 0\] stats: comm [0-9]* '$1'" "$out" | grep -q "$2" ||
    { grep "mpizip 0" "$out"; fail "$3"; }
}
run ""
expect slow "sent fp32 messages=18 compressed=6 " "default: the slow link's smooth messages not all compressed"
expect slow "incompressible streams=1 sent raw=10;" "default: the random stream not found incompressible after one try"
expect slow "cost model: compressed=7 raw=1 " "default: the model's decisions on the slow link"
expect slow "links=.* cpu codec=[0-9.]* GB/s" "default: the CPU codec's rate as the model used it"
expect fast "sent fp32 messages=6 compressed=0 " "default: a message compressed on the fast link"
expect fast "cost model: compressed=0 raw=6 " "default: the model's decisions on the fast link"
expect fast "links=20.00-20.00 GB/s" "default: the fast link's rate not the hint's"
run "MPIZIP_COMPRESS=always"
expect fast "sent fp32 messages=6 compressed=6 " "always: the fast link's messages not compressed"
if grep -q "cost model:" "$out"; then fail "always: the cost model was asked"; fi
run "MPIZIP_COMPRESS=never"
expect slow "sent fp32 messages=18 compressed=0 " "never: a message compressed"
# The two-shot's calls (cost::Model::collective_compress): 3 ranks, each its own node, an allreduce of
# every size measured both ways and then the faster, each rank deciding for its own pieces (a rank
# may take the other way on a call: its hello tells its peers). Every result checked (-c), both ways
# taken on rank 0; MPIZIP_COMPRESS=never asks no model.
osu="$MPIZIP_BUILDDIR/osu-bench/osu_allreduce"
coll="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_TRANSPORT=emulated MPIZIP_EMU_GBPS=0.5 MPIZIP_FORCE_INTERNODE=1 MPIZIP_MIN_BYTES=0 MPIZIP_ALLREDUCE_MIN_BYTES=0 MPIZIP_STATS=1"
for extra in "" "MPIZIP_COMPRESS=never"; do
  MPIZIP_TEST_ENV="$coll $extra" timeout -k 10 120 \
    sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip 3 '$osu' -T float --data uniform -m 65536:1048576 -i 40 -x 2 -c" \
    >"$out" 2>&1 || { tail -n 20 "$out"; fail "allreduce $extra: exit (a hang times out)"; }
  if grep -q "Fail" "$out" || [ "$(grep -c "Pass" "$out")" != 5 ]; then tail -n 20 "$out"; fail "allreduce $extra: a result differs"; fi
  if [ -z "$extra" ]; then
    grep "\[mpizip 0\] stats: comm 0 " "$out" | grep -Eq "cost model collectives: compressed=[1-9][0-9]* raw=[1-9]" ||
      { grep "mpizip 0" "$out"; fail "allreduce: the model did not take both ways"; }
  elif grep -q "cost model collectives" "$out"; then
    fail "allreduce, never: the model was asked"
  fi
done
echo "when_to_compress: the decision follows each link's rate; incompressible data stops compressing; always and never obeyed; the two-shot measured both ways, results exact"
