// osu_allgatherv: MPI_Allgatherv; the size is what each rank contributes, as in OSU (under
// --uneven, the largest block: see v_layout in common/collective.h).
// Built with OSUB_NONBLOCKING, osu_iallgatherv: MPI_Iallgatherv, timed as OSU times its
// non-blocking collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Allgatherv : public Benchmark {
 public:
  explicit Allgatherv(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, ctx.opts.largest_size(), v_buffer_bytes(ctx)) {}

  std::vector<std::string> header_lines() const override { return {v_layout_description(ctx_)}; }

  std::optional<Row> run(size_t bytes) override {
    const VLayout layout = v_layout(ctx_, bytes);
    const int mine = layout.counts[size_t(ctx_.rank)];
    const size_t extent = layout.extent * ctx_.elem_size;
    bufs_.poison(extent);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = bufs_.send().send_view(size_t(mine) * ctx_.elem_size);
          void* recv = bufs_.recv().recv_view();
          MPI_Datatype type = ctx_.mpi.datatype;
          request ? MPI_Iallgatherv(send, mine, type, recv, layout.counts.data(),
                                    layout.displs.data(), type, MPI_COMM_WORLD, request)
                  : MPI_Allgatherv(send, mine, type, recv, layout.counts.data(),
                                   layout.displs.data(), type, MPI_COMM_WORLD);
        },
        [&] { bufs_.recv().received(extent); })};
    // On every rank, block r must be rank r's data, bit for bit, and nothing else written.
    if (ctx_.opts.validate)
      row.valid = gathered_v(ctx_, bufs_.recv(), layout, bufs_.inputs());
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv,
                    v_collective_spec("OSU MPI Allgatherv Latency Test",
                                      "OSU MPI Non-blocking Allgatherv Latency Test",
                                      make_benchmark<Allgatherv>));
}
