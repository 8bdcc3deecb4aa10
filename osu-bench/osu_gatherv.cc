// osu_gatherv: MPI_Gatherv to rank 0, as OSU's default; the size is what each rank contributes
// (under --uneven, the largest block: see v_layout in common/collective.h).
// Built with OSUB_NONBLOCKING, osu_igatherv: MPI_Igatherv, timed as OSU times its non-blocking
// collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Gatherv : public Benchmark {
 public:
  explicit Gatherv(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, ctx.opts.largest_size(), v_buffer_bytes(ctx)) {}

  std::vector<std::string> header_lines() const override { return {v_layout_description(ctx_)}; }

  std::optional<Row> run(size_t bytes) override {
    const VLayout layout = v_layout(ctx_, bytes);
    const int mine = layout.counts[size_t(ctx_.rank)];
    const size_t extent = layout.extent * ctx_.elem_size;
    const bool root = ctx_.rank == 0;
    if (root) bufs_.poison(extent);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = bufs_.send().send_view(size_t(mine) * ctx_.elem_size);
          void* recv = root ? bufs_.recv().recv_view() : nullptr;
          MPI_Datatype type = ctx_.mpi.datatype;
          request ? MPI_Igatherv(send, mine, type, recv, layout.counts.data(),
                                 layout.displs.data(), type, 0, MPI_COMM_WORLD, request)
                  : MPI_Gatherv(send, mine, type, recv, layout.counts.data(),
                                layout.displs.data(), type, 0, MPI_COMM_WORLD);
        },
        [&] {
          if (root) bufs_.recv().received(extent);
        })};
    // At the root, block r must be rank r's data, bit for bit, and nothing else written.
    if (ctx_.opts.validate && root)
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
                    v_collective_spec("OSU MPI Gatherv Latency Test",
                                      "OSU MPI Non-blocking Gatherv Latency Test",
                                      make_benchmark<Gatherv>));
}
