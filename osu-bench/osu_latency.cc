// osu_latency: ping-pong between two ranks; half the round-trip time, as OSU reports it.
#include <mpi.h>

#include "osu-bench/common/harness.h"
#include "osu-bench/common/p2p.h"

namespace {

using namespace osub;

class Latency : public Benchmark {
 public:
  explicit Latency(const Context& ctx) : ctx_(ctx), link_(ctx, ctx.opts.largest_size()) {}

  std::optional<Row> run(size_t bytes) override {
    link_.poison(bytes);
    double seconds = time_steps(ctx_, bytes, [&] { ping_pong(bytes); });
    double latency_us = seconds * 1e6 / (2.0 * ctx_.opts.iterations_for(bytes));
    return Row{{latency_us}, link_.received_ok(bytes)};
  }

 private:
  void ping_pong(size_t bytes) {
    if (ctx_.rank == 0) {
      link_.send(bytes);
      link_.recv(bytes);
    } else {
      link_.recv(bytes);
      link_.send(bytes);
    }
  }

  const Context& ctx_;
  PeerLink link_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv,
                    point_to_point_spec("OSU MPI Latency Test", "Avg Latency(us)", false,
                                        make_benchmark<Latency>));
}
