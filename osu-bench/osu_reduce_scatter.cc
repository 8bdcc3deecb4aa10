// osu_reduce_scatter: MPI_Reduce_scatter with MPI_SUM and OSU's counts: the size is the whole
// buffer each rank contributes, of n elements; rank r receives n / ranks of the sum, one more for
// the first n % ranks ranks (with fewer elements than ranks, one each for the first n). Built with
// OSUB_BLOCK, osu_reduce_scatter_block: MPI_Reduce_scatter_block, every rank n / ranks elements (a
// remainder of fewer elements than ranks is not sent, and sizes with fewer elements than ranks are
// skipped). With OSUB_NONBLOCKING, the non-blocking forms (osu_ireduce_scatter,
// osu_ireduce_scatter_block), timed as OSU times its non-blocking collectives (time_overlap in
// common/harness.h).
#include <mpi.h>

#include <vector>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

#ifdef OSUB_BLOCK
constexpr bool kBlock = true;
#else
constexpr bool kBlock = false;
#endif

class ReduceScatter : public Benchmark {
 public:
  explicit ReduceScatter(const Context& ctx)
      : ctx_(ctx),
        bufs_(ctx, ctx.opts.largest_size(),
              kBlock ? ctx.opts.largest_size() / size_t(ctx.nranks)
                     : (ctx.opts.largest_size() / ctx.elem_size / size_t(ctx.nranks) + 1) *
                           ctx.elem_size),
        counts_(size_t(ctx.nranks)) {}

  std::vector<std::string> header_lines() const override {
    const char* call = kBlock ? (ctx_.nonblocking ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block")
                              : (ctx_.nonblocking ? "MPI_Ireduce_scatter" : "MPI_Reduce_scatter");
    std::vector<std::string> lines = {
        std::string("Call: ") + call + "; Size is the bytes each rank contributes" +
        (kBlock ? "" : "; counts as OSU's (n / ranks each, one more for the first n % ranks)")};
    if (ctx_.opts.validate) lines.push_back(sum_check_description(ctx_));
    return lines;
  }

  std::optional<Row> run(size_t bytes) override {
    const size_t n = bytes / ctx_.elem_size;  // elements each rank contributes
    const size_t P = size_t(ctx_.nranks);
    // This rank's count and the offset of its block in the sum, in elements.
    size_t mine = 0, first = 0;
    if (kBlock) {
      mine = n / P;
      if (mine == 0) return std::nullopt;
      first = size_t(ctx_.rank) * mine;
    } else {
      if (n == 0) return std::nullopt;
      for (size_t q = 0; q < P; ++q) {
        const size_t c = n < P ? (q < n ? 1 : 0) : n / P + (q < n % P ? 1 : 0);
        counts_[q] = int(c);
        if (q < size_t(ctx_.rank)) first += c;
      }
      mine = size_t(counts_[size_t(ctx_.rank)]);
    }
    const size_t mine_bytes = mine * ctx_.elem_size;
    const size_t send_bytes = kBlock ? mine_bytes * P : n * ctx_.elem_size;
    bufs_.poison(mine_bytes);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = bufs_.send().send_view(send_bytes);
          void* recv = bufs_.recv().recv_view();
          if (kBlock) {
            request ? MPI_Ireduce_scatter_block(send, recv, int(mine), ctx_.mpi.datatype, MPI_SUM,
                                                MPI_COMM_WORLD, request)
                    : MPI_Reduce_scatter_block(send, recv, int(mine), ctx_.mpi.datatype, MPI_SUM,
                                               MPI_COMM_WORLD);
          } else {
            request ? MPI_Ireduce_scatter(send, recv, counts_.data(), ctx_.mpi.datatype, MPI_SUM,
                                          MPI_COMM_WORLD, request)
                    : MPI_Reduce_scatter(send, recv, counts_.data(), ctx_.mpi.datatype, MPI_SUM,
                                         MPI_COMM_WORLD);
          }
        },
        [&] { bufs_.recv().received(mine_bytes); })};
    if (ctx_.opts.validate)
      row.valid = check_sum(ctx_, bufs_.inputs(), first, bufs_.result(mine_bytes));
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
  std::vector<int> counts_;  // MPI_Reduce_scatter's receive counts
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(
      argc, argv,
      kBlock ? collective_spec("OSU MPI Reduce_scatter_block Latency Test",
                               "OSU MPI Non-blocking Reduce_scatter_block Latency Test",
                               make_benchmark<ReduceScatter>)
             : collective_spec("OSU MPI Reduce_scatter Latency Test",
                               "OSU MPI Non-blocking Reduce_scatter Latency Test",
                               make_benchmark<ReduceScatter>));
}
