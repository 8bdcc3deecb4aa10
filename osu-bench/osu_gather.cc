// osu_gather: MPI_Gather to rank 0, as OSU's default; the size is what each rank contributes.
// Built with OSUB_NONBLOCKING, osu_igather: MPI_Igather, timed as OSU times its non-blocking
// collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include <cstring>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Gather : public Benchmark {
 public:
  explicit Gather(const Context& ctx)
      : ctx_(ctx),
        bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size() * size_t(ctx.nranks)) {}

  std::optional<Row> run(size_t bytes) override {
    const int count = int(bytes / ctx_.elem_size);
    const size_t total = bytes * size_t(ctx_.nranks);
    const bool root = ctx_.rank == 0;
    if (root) bufs_.poison(total);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = bufs_.send().send_view(bytes);
          void* recv = root ? bufs_.recv().recv_view() : nullptr;
          MPI_Datatype type = ctx_.mpi.datatype;
          request ? MPI_Igather(send, count, type, recv, count, type, 0, MPI_COMM_WORLD, request)
                  : MPI_Gather(send, count, type, recv, count, type, 0, MPI_COMM_WORLD);
        },
        [&] {
          if (root) bufs_.recv().received(total);
        })};
    // At the root, block r of the result must be rank r's data, bit for bit.
    if (ctx_.opts.validate) row.valid = !root || gathered(bufs_.result(total), bufs_.inputs(), bytes);
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv, collective_spec("OSU MPI Gather Latency Test",
                                                 "OSU MPI Non-blocking Gather Latency Test",
                                                 make_benchmark<Gather>));
}
