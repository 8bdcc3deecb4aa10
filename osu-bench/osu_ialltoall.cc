// osu_ialltoall: MPI_Ialltoall, timed as OSU times its non-blocking collectives (time_overlap in
// common/harness.h); the size is what each rank sends to each rank, as in OSU.
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Ialltoall : public Benchmark {
 public:
  explicit Ialltoall(const Context& ctx)
      : ctx_(ctx),
        bufs_(ctx, ctx.opts.largest_size() * size_t(ctx.nranks),
              ctx.opts.largest_size() * size_t(ctx.nranks)) {}

  std::optional<Row> run(size_t bytes) override {
    const int count = int(bytes / ctx_.elem_size);
    const size_t total = bytes * size_t(ctx_.nranks);
    bufs_.poison(total);
    Row row{time_overlap(
        ctx_, bytes,
        [&](MPI_Request* request) {
          MPI_Ialltoall(bufs_.send().send_view(total), count, ctx_.mpi.datatype,
                        bufs_.recv().recv_view(), count, ctx_.mpi.datatype, MPI_COMM_WORLD,
                        request);
        },
        [&] { bufs_.recv().received(total); })};
    if (ctx_.opts.validate)
      row.valid = exchanged(bufs_.result(total), bufs_.inputs(), ctx_.rank, bytes);
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv, nonblocking_spec("OSU MPI Non-blocking All-to-All Latency Test",
                                                 make_benchmark<Ialltoall>));
}
