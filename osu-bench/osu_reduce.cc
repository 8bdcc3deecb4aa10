// osu_reduce: MPI_Reduce with MPI_SUM to rank 0, as OSU's default; the size is the buffer every
// rank contributes.
// Built with OSUB_NONBLOCKING, osu_ireduce: MPI_Ireduce, timed as OSU times its non-blocking
// collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Reduce : public Benchmark {
 public:
  explicit Reduce(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size()) {}

  std::vector<std::string> header_lines() const override {
    std::vector<std::string> lines = {"Call: MPI_Reduce to rank 0"};
    if (ctx_.opts.validate) lines.push_back(sum_check_description(ctx_));
    return lines;
  }

  std::optional<Row> run(size_t bytes) override {
    const int count = int(bytes / ctx_.elem_size);
    if (count == 0) return std::nullopt;
    const bool root = ctx_.rank == 0;
    if (root) bufs_.poison(bytes);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = bufs_.send().send_view(bytes);
          void* recv = root ? bufs_.recv().recv_view() : nullptr;
          request ? MPI_Ireduce(send, recv, count, ctx_.mpi.datatype, MPI_SUM, 0, MPI_COMM_WORLD,
                                request)
                  : MPI_Reduce(send, recv, count, ctx_.mpi.datatype, MPI_SUM, 0, MPI_COMM_WORLD);
        },
        [&] {
          if (root) bufs_.recv().received(bytes);
        })};
    // The root must hold the sum; the others hold nothing to check.
    if (ctx_.opts.validate) row.valid = !root || check_sum(ctx_, bufs_.inputs(), 0, bufs_.result(bytes));
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv, collective_spec("OSU MPI Reduce Latency Test",
                                                 "OSU MPI Non-blocking Reduce Latency Test",
                                                 make_benchmark<Reduce>));
}
