// osu_iallreduce: MPI_Iallreduce with MPI_SUM of a buffer of the given size on every rank, timed as
// OSU times its non-blocking collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Iallreduce : public Benchmark {
 public:
  explicit Iallreduce(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size()) {}

  std::vector<std::string> header_lines() const override {
    if (!ctx_.opts.validate) return {};
    return {sum_check_description(ctx_)};
  }

  std::optional<Row> run(size_t bytes) override {
    const int count = int(bytes / ctx_.elem_size);
    bufs_.poison(bytes);
    Row row{time_overlap(
        ctx_, bytes,
        [&](MPI_Request* request) {
          MPI_Iallreduce(bufs_.send().send_view(bytes), bufs_.recv().recv_view(), count,
                         ctx_.mpi.datatype, MPI_SUM, MPI_COMM_WORLD, request);
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
  return bench_main(argc, argv, nonblocking_spec("OSU MPI Non-blocking Allreduce Latency Test",
                                                 make_benchmark<Iallreduce>));
}
