// osu_scatterv: MPI_Scatterv from rank 0, as OSU's default; the size is what each rank receives
// (under --uneven, the largest block: see v_layout in common/collective.h). The root's send buffer
// holds its own data, block r at rank r's displacement.
// Built with OSUB_NONBLOCKING, osu_iscatterv: MPI_Iscatterv, timed as OSU times its non-blocking
// collectives (time_overlap in common/harness.h).
#include <mpi.h>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

class Scatterv : public Benchmark {
 public:
  explicit Scatterv(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, v_buffer_bytes(ctx), ctx.opts.largest_size()) {}

  std::vector<std::string> header_lines() const override { return {v_layout_description(ctx_)}; }

  std::optional<Row> run(size_t bytes) override {
    const VLayout layout = v_layout(ctx_, bytes);
    const int mine = layout.counts[size_t(ctx_.rank)];
    const bool root = ctx_.rank == 0;
    bufs_.poison(bytes);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = root ? bufs_.send().send_view(layout.extent * ctx_.elem_size) : nullptr;
          void* recv = bufs_.recv().recv_view();
          MPI_Datatype type = ctx_.mpi.datatype;
          request ? MPI_Iscatterv(send, layout.counts.data(), layout.displs.data(), type, recv,
                                  mine, type, 0, MPI_COMM_WORLD, request)
                  : MPI_Scatterv(send, layout.counts.data(), layout.displs.data(), type, recv,
                                 mine, type, 0, MPI_COMM_WORLD);
        },
        [&] { bufs_.recv().received(size_t(mine) * ctx_.elem_size); })};
    // Rank r must hold block r of the root's send buffer, bit for bit, and the rest of the Size
    // bytes must be untouched.
    if (ctx_.opts.validate) {
      const std::byte* block =
          bufs_.inputs()[0].data() + size_t(layout.displs[size_t(ctx_.rank)]) * ctx_.elem_size;
      row.valid = blocks_placed(ctx_, bufs_.recv(), {{mine}, {0}, bytes / ctx_.elem_size},
                                [&](int) { return block; });
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
                    v_collective_spec("OSU MPI Scatterv Latency Test",
                                      "OSU MPI Non-blocking Scatterv Latency Test",
                                      make_benchmark<Scatterv>));
}
