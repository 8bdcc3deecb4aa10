// osu_allreduce: MPI_Allreduce with MPI_SUM of a buffer of the given size on every rank; built with
// OSUB_NONBLOCKING, osu_iallreduce: MPI_Iallreduce, timed as OSU times its non-blocking collectives
// (time_overlap in common/harness.h).
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Allreduce : public Benchmark {
 public:
  explicit Allreduce(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size()) {}

  std::vector<std::string> header_lines() const override {
    if (!ctx_.opts.validate) return {};
    return {sum_check_description(ctx_)};
  }

  std::optional<Row> run(size_t bytes) override {
    int count = int(bytes / ctx_.elem_size);
    bufs_.poison(bytes);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void *send = bufs_.send().send_view(bytes), *recv = bufs_.recv().recv_view();
          request ? MPI_Iallreduce(send, recv, count, ctx_.mpi.datatype, MPI_SUM, MPI_COMM_WORLD,
                                   request)
                  : MPI_Allreduce(send, recv, count, ctx_.mpi.datatype, MPI_SUM, MPI_COMM_WORLD);
        },
        [&] { bufs_.recv().received(bytes); })};
    if (ctx_.opts.validate)
      row.valid = check_sum(ctx_, bufs_.inputs(), 0, bufs_.result(bytes)) &&
                  same_on_all_ranks(bufs_.recv(), bytes);
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  BenchSpec spec = collective_spec("OSU MPI Allreduce Latency Test",
                                   "OSU MPI Non-blocking Allreduce Latency Test",
                                   make_benchmark<Allreduce>);
  spec.traits.mpizip_takes_device = true;  // MPIZip's two-shot allreduce, or its staging
  return bench_main(argc, argv, spec);
}
