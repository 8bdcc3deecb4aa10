// osu_bw: rank 0 streams windows of non-blocking sends to rank 1, which acknowledges each window.
#include <mpi.h>

#include <vector>

#include "osu-bench/common/harness.h"
#include "osu-bench/common/p2p.h"

namespace {

using namespace osub;

class Bandwidth : public Benchmark {
 public:
  explicit Bandwidth(const Context& ctx)
      : ctx_(ctx), link_(ctx, ctx.opts.largest_size()), requests_(size_t(ctx.opts.window)) {}

  std::optional<Row> run(size_t bytes) override {
    link_.poison(bytes);
    double seconds = time_steps(ctx_, bytes, [&] {
      if (ctx_.rank == 0)
        send_window(bytes);
      else
        recv_window(bytes);
    });
    double megabytes = double(bytes) / 1e6 * ctx_.opts.iterations_for(bytes) * ctx_.opts.window;
    bool valid = ctx_.rank == 0 || link_.received_ok(bytes);  // only rank 1 receives data
    return Row{{megabytes / seconds}, valid};
  }

 private:
  void send_window(size_t bytes) {
    for (MPI_Request& r : requests_) link_.isend(bytes, &r);
    MPI_Waitall(int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    link_.recv_ack();
  }

  void recv_window(size_t bytes) {
    for (MPI_Request& r : requests_) link_.irecv(bytes, &r);
    MPI_Waitall(int(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    for (size_t m = 0; m < requests_.size(); ++m) link_.received(bytes);
    link_.send_ack();
  }

  const Context& ctx_;
  PeerLink link_;
  std::vector<MPI_Request> requests_;
};

}  // namespace

int main(int argc, char** argv) {
  return bench_main(argc, argv,
                    point_to_point_spec("OSU MPI Bandwidth Test", "Bandwidth (MB/s)", true,
                                        make_benchmark<Bandwidth>));
}
