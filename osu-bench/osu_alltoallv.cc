// osu_alltoallv: MPI_Alltoallv; the size is what each rank sends to each rank, as in OSU (under
// --uneven, the largest block: the block rank i sends rank j has the count of rank (i + j) % P,
// so every rank sends and receives each count once; see v_layout in common/collective.h).
// Built with OSUB_NONBLOCKING, osu_ialltoallv: MPI_Ialltoallv, timed as OSU times its non-blocking
// collectives (time_overlap in common/harness.h). Built with OSUB_W, osu_alltoallw (and
// osu_ialltoallw): MPI_Alltoallw with the same blocks, displacements in bytes and the same
// datatype for every peer, as OSU's osu_alltoallw.
#include <mpi.h>

#include <vector>

#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

#ifdef OSUB_W
constexpr bool kW = true;
#else
constexpr bool kW = false;
#endif

class Alltoallv : public Benchmark {
 public:
  explicit Alltoallv(const Context& ctx)
      : ctx_(ctx), bufs_(ctx, v_buffer_bytes(ctx), v_buffer_bytes(ctx)) {}

  std::vector<std::string> header_lines() const override { return {v_layout_description(ctx_)}; }

  std::optional<Row> run(size_t bytes) override {
    // This rank's blocks, sent and received alike: block j goes to and comes from rank j.
    const VLayout layout = v_layout(ctx_, bytes, ctx_.rank);
    const size_t extent = layout.extent * ctx_.elem_size;
    // MPI_Alltoallw's displacements are in bytes, and it takes a datatype per peer.
    std::vector<int> byte_displs(layout.displs.size());
    for (size_t j = 0; j < byte_displs.size(); ++j)
      byte_displs[j] = layout.displs[j] * int(ctx_.elem_size);
    const std::vector<MPI_Datatype> types(layout.counts.size(), ctx_.mpi.datatype);
    bufs_.poison(extent);
    Row row{time_call(
        ctx_, bytes,
        [&](MPI_Request* request) {
          void* send = bufs_.send().send_view(extent);
          void* recv = bufs_.recv().recv_view();
          const int* n = layout.counts.data();
          const int* d = layout.displs.data();
          MPI_Datatype type = ctx_.mpi.datatype;
          if (kW) {
            const int* b = byte_displs.data();
            const MPI_Datatype* t = types.data();
            request ? MPI_Ialltoallw(send, n, b, t, recv, n, b, t, MPI_COMM_WORLD, request)
                    : MPI_Alltoallw(send, n, b, t, recv, n, b, t, MPI_COMM_WORLD);
          } else {
            request ? MPI_Ialltoallv(send, n, d, type, recv, n, d, type, MPI_COMM_WORLD, request)
                    : MPI_Alltoallv(send, n, d, type, recv, n, d, type, MPI_COMM_WORLD);
          }
        },
        [&] { bufs_.recv().received(extent); })};
    // Block j must be the block rank j sent this rank, from rank j's layout, bit for bit.
    if (ctx_.opts.validate)
      row.valid = blocks_placed(ctx_, bufs_.recv(), layout, [&](int j) {
        const int at = v_layout(ctx_, bytes, j).displs[size_t(ctx_.rank)];
        return bufs_.inputs()[size_t(j)].data() + size_t(at) * ctx_.elem_size;
      });
    return row;
  }

 private:
  const Context& ctx_;
  CollectiveBuffers bufs_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv,
                    kW ? v_collective_spec("OSU MPI All-to-Allw Personalized Exchange Latency Test",
                                           "OSU MPI Non-blocking All-to-Allw Latency Test",
                                           make_benchmark<Alltoallv>)
                       : v_collective_spec("OSU MPI All-to-Allv Personalized Exchange Latency Test",
                                           "OSU MPI Non-blocking All-to-Allv Latency Test",
                                           make_benchmark<Alltoallv>));
}
