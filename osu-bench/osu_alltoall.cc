// osu_alltoall: MPI_Alltoall; the size is what each rank sends to each rank, as in OSU. Built with
// OSUB_NONBLOCKING, osu_ialltoall: MPI_Ialltoall, timed as OSU times its non-blocking collectives
// (time_overlap in common/harness.h).
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
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void *send = bufs_.send().send_view(total), *recv = bufs_.recv().recv_view();
          MPI_Datatype type = ctx_.mpi.datatype;
          request ? MPI_Ialltoall(send, count, type, recv, count, type, MPI_COMM_WORLD, request)
                  : MPI_Alltoall(send, count, type, recv, count, type, MPI_COMM_WORLD);
        },
        [&] { bufs_.recv().received(total); })};
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
                                    "OSU MPI Non-blocking All-to-All Latency Test",
                                    make_benchmark<Alltoall>));
}
