// osu_bibw: both ranks post a window of receives and a window of sends at once; the figure is the
// bytes moved in both directions per second.
#include <mpi.h>

#include <vector>

#include "osu-bench/common/harness.h"
#include "osu-bench/common/p2p.h"

namespace {

using namespace osub;

class BiBandwidth : public Benchmark {
 public:
  explicit BiBandwidth(const Context& ctx)
      : ctx_(ctx), link_(ctx, ctx.opts.largest_size()), requests_(2 * size_t(ctx.opts.window)) {}

  std::optional<Row> run(size_t bytes) override {
    link_.poison(bytes);
    double seconds = time_steps(ctx_, bytes, [&] { exchange_window(bytes); });
    double megabytes =
        2.0 * double(bytes) / 1e6 * ctx_.opts.iterations_for(bytes) * ctx_.opts.window;
    return Row{{megabytes / seconds}, link_.received_ok(bytes)};
  }

 private:
  void exchange_window(size_t bytes) {
    size_t window = size_t(ctx_.opts.window);
    for (size_t m = 0; m < window; ++m) link_.irecv(bytes, &requests_[m]);
    for (size_t m = 0; m < window; ++m) link_.isend(bytes, &requests_[window + m]);
    MPI_Waitall(int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    for (size_t m = 0; m < window; ++m) link_.received(bytes);
  }

  const Context& ctx_;
  PeerLink link_;
  std::vector<MPI_Request> requests_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv,
                    point_to_point_spec("OSU MPI Bi-Directional Bandwidth Test", "Bandwidth (MB/s)",
                                        true, make_benchmark<BiBandwidth>));
}
