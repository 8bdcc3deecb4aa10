// osu_scatter: MPI_Scatter from rank 0, as OSU's default; the size is what each rank receives.
// The root's send buffer holds its own data's first `size` bytes for every rank's block in turn
// (the benchmark's inputs: rank r's block is rank r's data, which the root knows as every rank
// does).
// Built with OSUB_NONBLOCKING, osu_iscatter: MPI_Iscatter, timed as OSU times its non-blocking
// collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include <cstring>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Scatter : public Benchmark {
 public:
  explicit Scatter(const Context& ctx)
      : ctx_(ctx),
        bufs_(ctx, ctx.opts.largest_size() * size_t(ctx.nranks), ctx.opts.largest_size()) {}

  std::optional<Row> run(size_t bytes) override {
    const int count = int(bytes / ctx_.elem_size);
    const bool root = ctx_.rank == 0;
    bufs_.poison(bytes);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = root ? bufs_.send().send_view(bytes * size_t(ctx_.nranks)) : nullptr;
          void* recv = bufs_.recv().recv_view();
          MPI_Datatype type = ctx_.mpi.datatype;
          request ? MPI_Iscatter(send, count, type, recv, count, type, 0, MPI_COMM_WORLD, request)
                  : MPI_Scatter(send, count, type, recv, count, type, 0, MPI_COMM_WORLD);
        },
        [&] { bufs_.recv().received(bytes); })};
    // Rank r must hold block r of the root's send buffer, bit for bit.
    if (ctx_.opts.validate) {
      const std::vector<std::byte>& sent = bufs_.inputs()[0];
      row.valid = sent.size() >= bytes * size_t(ctx_.nranks) &&
                  std::memcmp(bufs_.result(bytes).data(),
                              sent.data() + size_t(ctx_.rank) * bytes, bytes) == 0;
    }
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv, collective_spec("OSU MPI Scatter Latency Test",
                                                 "OSU MPI Non-blocking Scatter Latency Test",
                                                 make_benchmark<Scatter>));
}
