// osu_allgather: MPI_Allgather; the size is what each rank contributes, as in OSU.
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
    Row row{time_collective(ctx_, bytes, [&] {
      MPI_Allgather(bufs_.send().send_view(bytes), count, ctx_.mpi.datatype,
                    bufs_.recv().recv_view(), count, ctx_.mpi.datatype, MPI_COMM_WORLD);
      bufs_.recv().received(total);
    })};
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
                    collective_spec("OSU MPI Allgather Latency Test", make_benchmark<Allgather>));
}
