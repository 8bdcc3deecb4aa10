// osu_gather: MPI_Gather to rank 0, as OSU's default; the size is what each rank contributes.
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
    Row row{time_collective(ctx_, bytes, [&] {
      MPI_Gather(bufs_.send().send_view(bytes), count, ctx_.mpi.datatype,
                 root ? bufs_.recv().recv_view() : nullptr, count, ctx_.mpi.datatype, 0,
                 MPI_COMM_WORLD);
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
  return bench_main(argc, argv, collective_spec("OSU MPI Gather Latency Test", make_benchmark<Gather>));
}
