#include "p2p/gpu_codec.h"

#include <mutex>
#include <vector>

#include "kernels/codec_gpu.h"

namespace mpizip::p2p {
namespace {

// Streams smaller than this are not split: their raw part would leave a few microseconds earlier
// at best, for a transfer of its own.
constexpr uint64_t kMinSplitBytes = 64 * 1024;

// Result words of the jobs in flight: pinned memory the kernels write and the host reads once the
// job's event has completed.
constexpr int kSlots = 4096;

struct Context {
  std::mutex mutex;
  platform::Stream stream;
  platform::DeviceMemory workspace;
  platform::PinnedMemory results;  // kSlots x kernels::gpu::DeviceResult
  std::vector<int> free_slots;
  bool ready = false;
};

Context& context() {
  static Context* c = new Context;  // outlives static destruction: jobs may end at exit
  return *c;
}

kernels::gpu::DeviceResult* slot_ptr(Context& c, int slot) {
  return static_cast<kernels::gpu::DeviceResult*>(c.results.get()) + slot;
}

// Caller holds c.mutex. Creates the stream and result words once; grows the shared workspace
// (zeroed on the stream, behind every job already queued) when `count` elements need more.
Status prepare(Context& c, format::DType t, uint64_t count, int* slot) {
  if (!c.ready) {
    // Independent of the legacy default stream, so that a synchronisation of that stream (before a
    // device buffer is exposed through CUDA IPC) does not wait for compressions queued here; each
    // job waits for the application's earlier work on it instead.
    if (c.stream.get() == nullptr) {
      MPIZIP_CHECK(c.stream.create(platform::Stream::Order::kIndependent));
    }
    if (c.results.get() == nullptr) {
      MPIZIP_CHECK(c.results.allocate(kSlots * sizeof(kernels::gpu::DeviceResult)));
    }
    for (int i = kSlots - 1; i >= 0; --i) c.free_slots.push_back(i);
    c.ready = true;
  }
  uint64_t ws = kernels::gpu::workspace_bytes(t, count);
  if (ws > c.workspace.size()) {
    MPIZIP_CHECK(c.stream.synchronize());  // jobs in flight still use the old workspace
    // Out of memory: the old workspace stays for the jobs it fits, and this one falls back.
    MPIZIP_CHECK(c.workspace.allocate(ws));
    MPIZIP_CHECK(kernels::gpu::workspace_init(c.workspace.get(), c.workspace.size(), c.stream.get()));
  }
  if (c.free_slots.empty()) return Status::kOutOfMemory;
  *slot = c.free_slots.back();
  c.free_slots.pop_back();
  return Status::kOk;
}

void release_slot(int slot) {
  Context& c = context();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.free_slots.push_back(slot);
}

}  // namespace

GpuJob::~GpuJob() {
  if (slot_ < 0) return;
  // The kernels may still write the result word: wait for the job before giving the slot back.
  bool finished = false;
  while (done_event_.get() != nullptr && done_event_.query(&finished) == Status::kOk && !finished) {
  }
  release_slot(slot_);
}

Status GpuJob::raw_ready(bool* ready) {
  return split_ ? raw_event_.query(ready) : done_event_.query(ready);
}

Status GpuJob::done(bool* finished) { return done_event_.query(finished); }

Status GpuJob::result() const {
  return Status::from_int(slot_ptr(context(), slot_)->status);
}

uint64_t GpuJob::size() const { return slot_ptr(context(), slot_)->size; }

uint64_t gpu_split_bytes(format::DType t, uint64_t count) {
  const uint64_t bytes = count * format::elem_bytes(t);
  return bytes >= kMinSplitBytes ? format::coded_offset(t, count) : 0;
}

Status gpu_start_compress(format::DType t, const void* src, uint64_t count, bool checksum,
                          bool split, GpuJob* job) {
  const uint64_t cap = kernels::gpu::max_compressed_size(t, count);
  MPIZIP_CHECK(job->stream_.resize(cap));
  Context& c = context();
  std::lock_guard<std::mutex> lock(c.mutex);
  MPIZIP_CHECK(prepare(c, t, count, &job->slot_));
  kernels::gpu::EncodeOptions opt;
  opt.checksum = checksum;
  auto* res = slot_ptr(c, job->slot_);
  MPIZIP_CHECK(c.stream.wait_for_default_stream());
  job->split_ = split && gpu_split_bytes(t, count) > 0;
  if (job->split_) {
    MPIZIP_CHECK(kernels::gpu::split(t, src, count, job->stream_.data(), cap, opt, c.stream.get(),
                                     nullptr));
    MPIZIP_CHECK(job->raw_event_.record(c.stream));
    MPIZIP_CHECK(kernels::gpu::encode(t, src, count, job->stream_.data(), cap, c.workspace.get(),
                                      c.workspace.size(), res, opt, c.stream.get()));
  } else {
    MPIZIP_CHECK(kernels::gpu::compress(t, src, count, job->stream_.data(), cap,
                                        c.workspace.get(), c.workspace.size(), res, opt,
                                        c.stream.get()));
  }
  return job->done_event_.record(c.stream);
}

Status gpu_start_decompress(format::DType t, const void* stream, uint64_t bytes, uint64_t count,
                            void* dst, uint64_t capacity, GpuJob* job) {
  const uint64_t need = count * format::elem_bytes(t);
  void* target = dst;
  if (need > capacity) {  // truncation: decode aside, deliver the first `capacity` bytes
    MPIZIP_CHECK(job->stream_.resize(need));
    target = job->stream_.data();
  }
  Context& c = context();
  std::lock_guard<std::mutex> lock(c.mutex);
  MPIZIP_CHECK(prepare(c, t, count, &job->slot_));
  auto* res = slot_ptr(c, job->slot_);
  MPIZIP_CHECK(c.stream.wait_for_default_stream());
  MPIZIP_CHECK(kernels::gpu::decompress(t, stream, bytes, target, need > capacity ? need : capacity,
                                        c.workspace.get(), c.workspace.size(), res, 0,
                                        c.stream.get()));
  if (target != dst) MPIZIP_CHECK(platform::copy_async(dst, target, capacity, c.stream));
  return job->done_event_.record(c.stream);
}

}  // namespace mpizip::p2p
