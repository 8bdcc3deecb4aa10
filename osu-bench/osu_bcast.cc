// osu_bcast: MPI_Bcast from rank 0, as OSU's default; the size is the message broadcast. Built with
// OSUB_NONBLOCKING, osu_ibcast: MPI_Ibcast, timed as OSU times its non-blocking collectives
// (time_overlap in common/harness.h).
#include <mpi.h>

#include <cstring>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Bcast : public Benchmark {
 public:
  explicit Bcast(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, ctx.opts.largest_size(), ctx.opts.largest_size()) {}

  std::optional<Row> run(size_t bytes) override {
    int count = int(bytes / ctx_.elem_size);
    const bool root = ctx_.rank == 0;
    if (!root) bufs_.poison(bytes);
    // The root sends its data (the send buffer), every other rank receives into its own.
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* buf = root ? bufs_.send().send_view(bytes) : bufs_.recv().recv_view();
          request ? MPI_Ibcast(buf, count, ctx_.mpi.datatype, 0, MPI_COMM_WORLD, request)
                  : MPI_Bcast(buf, count, ctx_.mpi.datatype, 0, MPI_COMM_WORLD);
        },
        [&] {
          if (!root) bufs_.recv().received(bytes);
        })};
    // Every rank but the root must hold the root's data, bit for bit.
    if (ctx_.opts.validate) {
      row.valid = root || std::memcmp(bufs_.result(bytes).data(), bufs_.inputs()[0].data(),
                                      bytes) == 0;
    }
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv,
                    collective_spec("OSU MPI Broadcast Latency Test",
                                    "OSU MPI Non-Blocking Broadcast Latency Test",
                                    make_benchmark<Bcast>));
}
