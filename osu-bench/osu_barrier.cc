// osu_barrier: MPI_Barrier. No data moves, so one row of size 0; -m, -T, --data and -d are
// accepted and have no effect, as in OSU. Built with OSUB_NONBLOCKING, osu_ibarrier: MPI_Ibarrier,
// timed as OSU times its non-blocking collectives (time_overlap in common/harness.h).
//
// -c checks what a barrier promises, after the timed loop: each rank in turn enters it kDelay late,
// and every other rank must have waited in it at least half that (no rank leaves before the last
// one has entered; half, so that a rank descheduled after the barrier before cannot fail it).
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "osu-bench/common/harness.h"

namespace {

using namespace osub;

constexpr double kDelay = 0.05;  // seconds

class Barrier : public Benchmark {
 public:
  explicit Barrier(const Context& ctx) : ctx_(ctx) {}

  std::vector<std::string> header_lines() const override {
    if (!ctx_.opts.validate) return {};
    return {"Validation: each rank in turn enters 50 ms late; the others must wait 25 ms or more"};
  }

  std::optional<Row> run(size_t bytes) override {
    Row row{time_call(
        ctx_, bytes,
        [](MPI_Request* request) {
          request ? MPI_Ibarrier(MPI_COMM_WORLD, request) : MPI_Barrier(MPI_COMM_WORLD);
        },
        [] {})};
    if (ctx_.opts.validate) row.valid = waits_for_the_last();
    return row;
  }

 private:
  bool waits_for_the_last() const {
    bool ok = true;
    for (int late = 0; late < ctx_.nranks; ++late) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (ctx_.rank == late)
        std::this_thread::sleep_for(std::chrono::duration<double>(kDelay));
      double start = MPI_Wtime();
      MPI_Barrier(MPI_COMM_WORLD);
      double waited = MPI_Wtime() - start;
      if (ctx_.rank != late && waited < kDelay / 2) {
        std::fprintf(stderr, "validation: rank %d left the barrier after %.3f ms, rank %d entered "
                     "it %.0f ms late\n", ctx_.rank, waited * 1e3, late, kDelay * 1e3);
        ok = false;
      }
    }
    return ok;
  }

  const Context& ctx_;
};

}  // namespace

int main(int argc, char** argv) {
  BenchSpec spec = collective_spec("OSU MPI Barrier Latency Test",
                                   "OSU MPI Non-blocking Barrier Latency Test",
                                   make_benchmark<Barrier>);
  spec.traits.sizeless = true;
  return bench_main(argc, argv, spec);
}
