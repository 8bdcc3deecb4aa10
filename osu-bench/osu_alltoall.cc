// osu_alltoall: MPI_Alltoall; the size is what each rank sends to each rank, as in OSU.
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Alltoall : public Benchmark {
 public:
  explicit Alltoall(const Context& ctx)
      : ctx_(ctx),
        bufs_(ctx, ctx.opts.largest_size() * size_t(ctx.nranks),
              ctx.opts.largest_size() * size_t(ctx.nranks)) {}

  std::optional<Row> run(size_t bytes) override {
    int count = int(bytes / ctx_.elem_size);
    size_t total = bytes * size_t(ctx_.nranks);
    bufs_.poison(total);
    Row row{time_collective(ctx_, bytes, [&] {
      MPI_Alltoall(bufs_.send().send_view(total), count, ctx_.mpi.datatype,
                   bufs_.recv().recv_view(), count, ctx_.mpi.datatype, MPI_COMM_WORLD);
      bufs_.recv().received(total);
    })};
    // Block r of the result must be block `rank` of rank r's data, bit for bit.
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
  return bench_main(argc, argv,
                    collective_spec("OSU MPI All-to-All Personalized Exchange Latency Test",
                                    make_benchmark<Alltoall>));
}
