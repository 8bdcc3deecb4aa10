// osu_iallgather: MPI_Iallgather, timed as OSU times its non-blocking collectives (time_overlap in
// common/harness.h); the size is what each rank contributes, as in OSU.
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Iallgather : public Benchmark {
 public:
  explicit Iallgather(const Context& ctx)
      : ctx_(ctx),
        bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size() * size_t(ctx.nranks)) {}

  std::optional<Row> run(size_t bytes) override {
    const int count = int(bytes / ctx_.elem_size);
    const size_t total = bytes * size_t(ctx_.nranks);
    bufs_.poison(total);
    Row row{time_overlap(
        ctx_, bytes,
        [&](MPI_Request* request) {
          MPI_Iallgather(bufs_.send().send_view(bytes), count, ctx_.mpi.datatype,
                         bufs_.recv().recv_view(), count, ctx_.mpi.datatype, MPI_COMM_WORLD,
                         request);
        },
        [&] { bufs_.recv().received(total); })};
    if (ctx_.opts.validate) row.valid = gathered(bufs_.result(total), bufs_.inputs(), bytes);
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv, nonblocking_spec("OSU MPI Non-blocking Allgather Latency Test",
                                                 make_benchmark<Iallgather>));
}
