// osu_reduce_scatter: MPI_Reduce_scatter_block with MPI_SUM. The size is the whole buffer each
// rank contributes; every rank receives size / ranks of the sum (a remainder of fewer elements
// than ranks is not sent, and sizes with fewer elements than ranks are skipped). Built with
// OSUB_NONBLOCKING, osu_ireduce_scatter: MPI_Ireduce_scatter_block, timed as OSU times its
// non-blocking collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class ReduceScatter : public Benchmark {
 public:
  explicit ReduceScatter(const Context& ctx)
      : ctx_(ctx),
        bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size() / size_t(ctx.nranks)) {}

  std::vector<std::string> header_lines() const override {
    std::vector<std::string> lines = {
        std::string("Call: ") +
        (ctx_.nonblocking ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block") +
        "; Size is the bytes each rank contributes"};
    if (ctx_.opts.validate) lines.push_back(sum_check_description(ctx_));
    return lines;
  }

  std::optional<Row> run(size_t bytes) override {
    size_t block = bytes / ctx_.elem_size / size_t(ctx_.nranks);  // elements per rank
    if (block == 0) return std::nullopt;
    size_t block_bytes = block * ctx_.elem_size;
    bufs_.poison(block_bytes);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = bufs_.send().send_view(block_bytes * size_t(ctx_.nranks));
          void* recv = bufs_.recv().recv_view();
          request ? MPI_Ireduce_scatter_block(send, recv, int(block), ctx_.mpi.datatype, MPI_SUM,
                                              MPI_COMM_WORLD, request)
                  : MPI_Reduce_scatter_block(send, recv, int(block), ctx_.mpi.datatype, MPI_SUM,
                                             MPI_COMM_WORLD);
        },
        [&] { bufs_.recv().received(block_bytes); })};
    if (ctx_.opts.validate)
      row.valid =
          check_sum(ctx_, bufs_.inputs(), size_t(ctx_.rank) * block, bufs_.result(block_bytes));
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(
      argc, argv,
      collective_spec("OSU MPI Reduce_scatter Latency Test",
                      "OSU MPI Non-blocking Reduce_scatter Latency Test",
                      make_benchmark<ReduceScatter>));
}
