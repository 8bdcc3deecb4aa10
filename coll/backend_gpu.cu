// The GPU backend of coll/backend.h: device memory, the GPU codec and the GPU reduce, all enqueued
// on one stream per backend (so one codec workspace serves every call), with events as fences.
// Host code; compiled by nvcc or hipcc for the event API of src/platform/gpu.h.
#include <algorithm>
#include <mutex>
#include <vector>

#include "coll/backend.h"
#include "kernels/codec_gpu.h"
#include "kernels/reduce_gpu.h"
#include "src/platform/device.h"
#include "src/platform/gpu.h"

namespace mpizip::coll {
namespace {

// Events are created once and recycled: a collective takes a few per piece.
class EventPool {
 public:
  ~EventPool() {
    for (gpuEvent_t e : free_) (void)gpuEventDestroy(e);
  }
  Status take(gpuEvent_t* out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      *out = free_.back();
      free_.pop_back();
      return Status::kOk;
    }
    MPIZIP_GPU_CHECK(gpuEventCreateWithFlags(out, gpuEventDisableTiming));
    return Status::kOk;
  }
  void give(gpuEvent_t e) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(e);
  }

 private:
  std::mutex mu_;
  std::vector<gpuEvent_t> free_;
};

class EventFence : public Fence {
 public:
  EventFence(EventPool* pool, gpuEvent_t e) : pool_(pool), event_(e) {}
  ~EventFence() override { pool_->give(event_); }
  Status test(bool* done) override {
    const gpuError_t err = gpuEventQuery(event_);
    if (err == gpuErrorNotReady) {
      *done = false;
      return Status::kOk;
    }
    MPIZIP_GPU_CHECK(err);
    *done = true;
    return Status::kOk;
  }

 private:
  EventPool* pool_;
  gpuEvent_t event_;
};

class DeviceBackend : public Backend {
 public:
  Status init() { return stream_.create(); }
  ~DeviceBackend() override { (void)stream_.synchronize(); }

  bool device() const override { return true; }

  Status reserve(const Needs& n) override {
    MPIZIP_CHECK(grow(work_, n.work_bytes));
    MPIZIP_CHECK(grow(staging_, n.staging_bytes));
    MPIZIP_CHECK(grow(results_, sizeof(Result) * static_cast<uint64_t>(n.results)));
    const uint64_t ws = kernels::gpu::workspace_bytes(n.dtype, n.codec_elems);
    if (ws > workspace_.size()) {
      MPIZIP_CHECK(workspace_.allocate(ws));
      MPIZIP_CHECK(kernels::gpu::workspace_init(workspace_.get(), ws, stream_.get()));
    }
    return Status::kOk;
  }
  uint8_t* work() override { return static_cast<uint8_t*>(work_.get()); }
  uint8_t* staging() override { return static_cast<uint8_t*>(staging_.get()); }
  Result* results() override { return static_cast<Result*>(results_.get()); }

  Status compress(format::DType t, const Job* jobs, int n, Result* results,
                  bool checksum) override {
    kernels::gpu::EncodeOptions opt;
    opt.checksum = checksum;
    return kernels::gpu::compress_batch(t, jobs, n, workspace_.get(), workspace_.size(), results,
                                        opt, stream_.get());
  }

  Status decompress(format::DType t, const Job* jobs, int n, Result* results) override {
    return kernels::gpu::decompress_batch(t, jobs, n, workspace_.get(), workspace_.size(), results,
                                          0, stream_.get());
  }

  Status reduce(format::DType t, kernels::reduce::Op op, const void* const* inputs, int n,
                void* out, uint64_t count) override {
    return kernels::gpu::reduce(kernels::reduce::type_of(t), op, inputs, n, out, count, 0, stream_.get());
  }

  // The streams are decoded inside the fold (kernels/codec_gpu.h, decode_fold) where that was
  // measured to be faster (osu-bench/fold, osu-bench/results/fold-h200.json): two streams or more,
  // of a 16-bit type at any size (1.02-1.82x) or of any type up to kFuseAnyBytes (1.09-2.39x).
  // One stream (0.71-1.05x) and fp32 / fp64 from 16 MiB (0.85-0.97x) take the decode-then-reduce
  // of the base class, as do unaligned buffers. Streams beyond the kMaxFoldStreams one launch
  // decodes are decoded into their temps first.
  static constexpr uint64_t kFuseAnyBytes = uint64_t{4} << 20;
  Status fold(format::DType t, kernels::reduce::Op op, const FoldInput* inputs, int n, void* out,
              uint64_t count, Result* results) override {
    namespace gpu = kernels::gpu;
    if (inputs == nullptr || n < 1 || n > gpu::kMaxBatch) return Status::kInvalidArgument;
    int streams = 0;
    for (int r = 0; r < n; ++r) streams += inputs[r].stream_bytes > 0;
    int early = std::max(0, streams - gpu::kMaxFoldStreams);
    std::vector<gpu::FoldInput> f(static_cast<size_t>(n));
    std::vector<Job> jobs;
    for (int r = 0; r < n; ++r) {
      const FoldInput& x = inputs[r];
      f[r] = gpu::FoldInput{x.data, x.stream_bytes};
      if (x.stream_bytes == 0 || early == 0) continue;
      if (x.temp == nullptr) return Status::kInvalidArgument;
      jobs.push_back(Job{x.data, x.stream_bytes, x.temp, count * format::elem_bytes(t)});
      f[r] = gpu::FoldInput{x.temp, 0};
      --early;
    }
    const uint64_t bytes = count * format::elem_bytes(t);
    const bool faster = streams >= 2 && (format::elem_bytes(t) == 2 || bytes <= kFuseAnyBytes);
    if (streams == 0 || !faster || !gpu::fold_decodes(t) || !gpu::fold_fusable(f.data(), n, out))
      return Backend::fold(t, op, inputs, n, out, count, results);
    if (!jobs.empty()) MPIZIP_CHECK(decompress(t, jobs.data(), static_cast<int>(jobs.size()), results));
    return gpu::decode_fold(t, op, f.data(), n, out, count, workspace_.get(), workspace_.size(),
                            results + jobs.size(), stream_.get());
  }

  Status copy(void* dst, const void* src, uint64_t bytes) override {
    if (bytes == 0 || dst == src) return Status::kOk;
    MPIZIP_GPU_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, stream()));
    return Status::kOk;
  }

  Status fence(std::unique_ptr<Fence>* out) override {
    gpuEvent_t e;
    MPIZIP_CHECK(events_.take(&e));
    auto f = std::make_unique<EventFence>(&events_, e);
    MPIZIP_GPU_CHECK(gpuEventRecord(e, stream()));
    *out = std::move(f);
    return Status::kOk;
  }

  Status drain() override { return stream_.synchronize(); }

 private:
  gpuStream_t stream() const { return static_cast<gpuStream_t>(stream_.get()); }

  // Grows `m` to at least `bytes` once nothing uses it (the caller has drained the stream).
  template <typename Memory>
  Status grow(Memory& m, uint64_t bytes) {
    if (bytes <= m.size()) return Status::kOk;
    MPIZIP_CHECK(stream_.synchronize());
    return m.allocate(bytes);
  }

  platform::Stream stream_;
  EventPool events_;  // after stream_: destroyed first, once the stream has drained
  platform::DeviceMemory work_;
  platform::PinnedMemory staging_;
  platform::PinnedMemory results_;
  platform::DeviceMemory workspace_;
};

}  // namespace

Status make_device_backend(std::unique_ptr<Backend>* out) {
  if (!platform::has_gpu()) return Status::kNoDevice;
  auto b = std::make_unique<DeviceBackend>();
  MPIZIP_CHECK(b->init());
  *out = std::move(b);
  return Status::kOk;
}

}  // namespace mpizip::coll
