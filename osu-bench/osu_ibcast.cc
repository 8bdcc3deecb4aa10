// osu_ibcast: MPI_Ibcast from rank 0, as OSU's default, timed as OSU times its non-blocking
// collectives (time_overlap in common/harness.h); the size is the message broadcast.
#include <mpi.h>

#include <cstring>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Ibcast : public Benchmark {
 public:
  explicit Ibcast(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size()) {}

  std::optional<Row> run(size_t bytes) override {
    const int count = int(bytes / ctx_.elem_size);
    const bool root = ctx_.rank == 0;
    if (!root) bufs_.poison(bytes);
    // The root sends its data (the send buffer), every other rank receives into its own.
    Row row{time_overlap(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* buf = root ? bufs_.send().send_view(bytes) : bufs_.recv().recv_view();
          MPI_Ibcast(buf, count, ctx_.mpi.datatype, 0, MPI_COMM_WORLD, request);
        },
        [&] {
          if (!root) bufs_.recv().received(bytes);
        })};
    if (ctx_.opts.validate && !root)
      row.valid = std::memcmp(bufs_.result(bytes).data(), bufs_.inputs()[0].data(), bytes) == 0;
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv, nonblocking_spec("OSU MPI Non-Blocking Broadcast Latency Test",
                                                 make_benchmark<Ibcast>));
}
