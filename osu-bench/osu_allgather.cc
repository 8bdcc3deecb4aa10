// osu_allgather: MPI_Allgather; the size is what each rank contributes, as in OSU. Built with
// OSUB_NONBLOCKING, osu_iallgather: MPI_Iallgather, timed as OSU times its non-blocking
// collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include <cstring>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Allgather : public Benchmark {
 public:
  explicit Allgather(const Context& ctx)
      : ctx_(ctx),
        bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size() * size_t(ctx.nranks)) {}

  std::optional<Row> run(size_t bytes) override {
    int count = int(bytes / ctx_.elem_size);
    size_t total = bytes * size_t(ctx_.nranks);
    bufs_.poison(total);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void *send = bufs_.send().send_view(bytes), *recv = bufs_.recv().recv_view();
          MPI_Datatype type = ctx_.mpi.datatype;
          request ? MPI_Iallgather(send, count, type, recv, count, type, MPI_COMM_WORLD, request)
                  : MPI_Allgather(send, count, type, recv, count, type, MPI_COMM_WORLD);
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
  return bench_main(argc, argv,
                    collective_spec("OSU MPI Allgather Latency Test",
                                    "OSU MPI Non-blocking Allgather Latency Test",
                                    make_benchmark<Allgather>));
}
