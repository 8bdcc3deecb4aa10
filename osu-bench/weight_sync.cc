// weight_sync: one weight update of reinforcement learning, where the trainer pushes a model's
// tensors to the inference engine. Rank 0 posts an MPI_Isend per tensor and rank 1 an MPI_Irecv
// per tensor, all at once, then both wait for all of them (MPI_Waitall); a barrier separates the
// iterations. Prints one row: the bytes of one sync, the median and the minimum time per sync, and
// the effective bandwidth (application bytes / median time). Rank 1 checks what arrived bit for
// bit against rank 0's generator on the first and the last iteration (-c: on every one).
// --bcast: each tensor goes out as an MPI_Bcast from rank 0 instead, one after the other, as a
// trainer broadcasts its weights to the inference engines.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "osu-bench/common/harness.h"
#include "osu-bench/common/validate.h"

namespace {

using namespace osub;

constexpr int kSender = 0, kReceiver = 1;

// Sizes of a model's worth of tensors, largest first (embedding, MLP, attention, norms and the
// rest bucketed), 369 MiB in all.
const std::vector<size_t> kDefaultTensors = {size_t(214) << 20, size_t(107) << 20, size_t(32) << 20,
                                             size_t(16) << 20};

class WeightSync : public Benchmark {
 public:
  // Tensor k holds elements [first_k, first_k + count_k) of rank 0's data, first_k the elements
  // of the tensors before it: distinct contents, all from the one generator rank 1 checks with.
  explicit WeightSync(const Context& ctx) : ctx_(ctx), requests_(ctx.opts.tensors.size()) {
    const RealWeights* real = ctx.real ? &*ctx.real : nullptr;
    size_t first = 0;
    for (size_t bytes : ctx.opts.tensors) {
      size_t count = bytes / ctx.elem_size;
      std::vector<std::byte> data(bytes);
      generate_data_range(ctx.opts.data, ctx.opts.type, kSender, first, count, real, data.data());
      buffers_.push_back(ctx.buffer(bytes));
      if (ctx.rank == kSender)
        buffers_.back()->upload(data.data(), bytes);
      else
        expected_.push_back(std::move(data));
      first += count;
    }
  }

  std::vector<std::string> header_lines() const override {
    const Options& o = ctx_.opts;
    std::string list;
    for (size_t b : o.tensors) list += (list.empty() ? "" : ", ") + format_bytes(b);
    int warmup = o.warmup_for(o.total_tensor_bytes());
    int steps = warmup + o.iterations_for(o.total_tensor_bytes());
    return {
        "Tensors: " + std::to_string(o.tensors.size()) + " (" + list + "), " +
            std::to_string(o.total_tensor_bytes()) + " bytes per sync",
        o.broadcast ? "Sync: MPI_Bcast of every tensor from rank 0, one after the other; a barrier "
                      "between iterations"
                    : "Sync: rank 0 MPI_Isend and rank 1 MPI_Irecv of every tensor (tag: its index), "
                      "all posted at once, then MPI_Waitall on both; a barrier between iterations",
        "Iterations: " + std::to_string(steps - warmup) + " timed after " + std::to_string(warmup) +
            " warm-up; time per sync: the slower rank's, from the barrier to the last "
            "tensor's arrival (staging copies included)",
        "Verification: rank 1, bit for bit against rank 0's data, " +
            std::string(o.check_every_step ? "every iteration"
                        : steps == 1       ? "iteration 1"
                                           : "iterations 1 and " + std::to_string(steps)) +
            " of " + std::to_string(steps) + " (warm-up counted)",
        "GB/s: bytes per sync / median time per sync, 10^9 bytes/s",
    };
  }

  std::optional<Row> run(size_t total) override {
    int warmup = ctx_.opts.warmup_for(total), iterations = ctx_.opts.iterations_for(total);
    int steps = warmup + iterations;
    std::vector<double> times;
    bool valid = true;
    for (int step = 0; step < steps; ++step) {
      bool check = ctx_.opts.check_every_step || step == 0 || step == steps - 1;
      if (check && ctx_.rank == kReceiver)
        for (auto& b : buffers_) poison(ctx_, *b, b->size());
      MPI_Barrier(MPI_COMM_WORLD);
      double start = MPI_Wtime();
      sync();
      double elapsed = MPI_Wtime() - start, slowest = 0;
      MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (step >= warmup) times.push_back(slowest);
      if (check && ctx_.rank == kReceiver) valid = verify(step + 1) && valid;
    }
    std::sort(times.begin(), times.end());
    size_t n = times.size();
    double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    return Row{{median * 1e3, times.front() * 1e3, double(total) / median / 1e9}, valid};
  }

 private:
  int count(size_t k) const { return int(ctx_.opts.tensors[k] / ctx_.elem_size); }

  void sync() {
    size_t n = buffers_.size();
    if (ctx_.opts.broadcast) {
      for (size_t k = 0; k < n; ++k) {
        void* p = ctx_.rank == kSender ? buffers_[k]->send_view(buffers_[k]->size()) : buffers_[k]->recv_view();
        MPI_Bcast(p, count(k), ctx_.mpi.datatype, kSender, MPI_COMM_WORLD);
      }
      if (ctx_.rank == kReceiver)
        for (auto& b : buffers_) b->received(b->size());
      return;
    }
    for (size_t k = 0; k < n; ++k) {
      if (ctx_.rank == kSender)
        MPI_Isend(buffers_[k]->send_view(buffers_[k]->size()), count(k), ctx_.mpi.datatype,
                  kReceiver, int(k), MPI_COMM_WORLD, &requests_[k]);
      else
        MPI_Irecv(buffers_[k]->recv_view(), count(k), ctx_.mpi.datatype, kSender, int(k),
                  MPI_COMM_WORLD, &requests_[k]);
    }
    MPI_Waitall(int(n), requests_.data(), MPI_STATUSES_IGNORE);
    if (ctx_.rank == kReceiver)
      for (auto& b : buffers_) b->received(b->size());
  }

  bool verify(int iteration) const {
    bool ok = true;
    for (size_t k = 0; k < buffers_.size(); ++k) {
      if (equals_bytes(*buffers_[k], expected_[k])) continue;
      std::fprintf(stderr,
                   "weight_sync: iteration %d: tensor %zu (%zu bytes) differs from what "
                   "rank 0 sent\n",
                   iteration, k, buffers_[k]->size());
      ok = false;
    }
    return ok;
  }

  const Context& ctx_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // rank 0: the tensors; rank 1: receive buffers
  std::vector<std::vector<std::byte>> expected_;  // rank 1: what rank 0 sends, on the host
  std::vector<MPI_Request> requests_;
};

}  // namespace

int main(int argc, char** argv) {
  BenchSpec spec{"Weight Sync Test (rank 0 sends a model's tensors to rank 1)",
                 {.point_to_point = true,
                  .window = false,
                  .default_max_size = 0,
                  .mpizip_takes_device = true,
                  .default_tensors = kDefaultTensors,
                  .default_type = ElemType::kBf16,
                  .default_iterations = 10,
                  .default_warmup = 2,
                  .always_validates = true},
                 {"Median time (ms)", "Min time (ms)", "GB/s (median)"},
                 2,
                 2,
                 make_benchmark<WeightSync>};
  return bench_main(argc, argv, spec);
}
