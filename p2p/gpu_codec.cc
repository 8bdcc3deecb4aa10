#include "p2p/gpu_codec.h"

#include <mutex>

#include "kernels/codec_cpu.h"
#include "kernels/codec_gpu.h"
#include "src/platform/device.h"

namespace mpizip::p2p {
namespace {

struct Context {
  std::mutex mutex;
  platform::Stream stream;
  platform::DeviceMemory scratch;    // compressed stream on the device
  platform::DeviceMemory output;     // decoded data when the user's buffer is too small
  platform::DeviceMemory workspace;
  platform::PinnedMemory result;     // kernels::gpu::DeviceResult, read after the stream syncs
  bool ready = false;
};

Context& context() {
  static Context c;
  return c;
}

// Caller holds c.mutex.
Status prepare(Context& c, format::DType t, uint64_t count, uint64_t scratch_bytes) {
  if (!c.ready) {
    MPIZIP_CHECK(c.stream.create());
    MPIZIP_CHECK(c.result.allocate(sizeof(kernels::gpu::DeviceResult)));
    c.ready = true;
  }
  MPIZIP_CHECK(c.scratch.reserve(scratch_bytes));
  uint64_t ws = kernels::gpu::workspace_bytes(t, count);
  if (ws > c.workspace.size()) {
    MPIZIP_CHECK(c.workspace.allocate(ws));
    MPIZIP_CHECK(kernels::gpu::workspace_init(c.workspace.get(), c.workspace.size(), c.stream.get()));
  }
  return Status::kOk;
}

const kernels::gpu::DeviceResult& result(Context& c) {
  return *static_cast<const kernels::gpu::DeviceResult*>(c.result.get());
}

}  // namespace

Status gpu_compress(format::DType t, const void* src, uint64_t count, bool checksum,
                    std::vector<uint8_t>* out) {
  Context& c = context();
  std::lock_guard<std::mutex> lock(c.mutex);
  uint64_t cap = kernels::gpu::max_compressed_size(t, count);
  MPIZIP_CHECK(prepare(c, t, count, cap));
  kernels::gpu::EncodeOptions opt;
  opt.checksum = checksum;
  auto* res = static_cast<kernels::gpu::DeviceResult*>(c.result.get());
  MPIZIP_CHECK(kernels::gpu::compress(t, src, count, c.scratch.get(), cap, c.workspace.get(),
                                      c.workspace.size(), res, opt, c.stream.get()));
  MPIZIP_CHECK(c.stream.synchronize());
  if (result(c).status != static_cast<int32_t>(Status::kOk)) {
    return static_cast<Status>(result(c).status);
  }
  out->resize(result(c).size);
  return platform::copy_to_host(out->data(), c.scratch.get(), result(c).size);
}

Status gpu_decompress(format::DType t, const uint8_t* stream, uint64_t bytes, void* dst,
                      uint64_t capacity, uint64_t* count) {
  kernels::cpu::StreamInfo info;
  MPIZIP_CHECK(kernels::cpu::read_header(stream, bytes, &info));
  if (info.dtype != t) return Status::kTypeMismatch;
  uint64_t need = info.count * format::elem_bytes(t);
  Context& c = context();
  std::lock_guard<std::mutex> lock(c.mutex);
  MPIZIP_CHECK(prepare(c, t, info.count, bytes));
  MPIZIP_CHECK(platform::copy_to_device(c.scratch.get(), stream, bytes));
  void* target = dst;
  if (need > capacity) {  // truncation: decode aside, deliver the first `capacity` bytes
    MPIZIP_CHECK(c.output.reserve(need));
    target = c.output.get();
  }
  auto* res = static_cast<kernels::gpu::DeviceResult*>(c.result.get());
  MPIZIP_CHECK(kernels::gpu::decompress(t, c.scratch.get(), bytes, target, need, c.workspace.get(),
                                        c.workspace.size(), res, 0, c.stream.get()));
  MPIZIP_CHECK(c.stream.synchronize());
  if (result(c).status != static_cast<int32_t>(Status::kOk)) {
    return static_cast<Status>(result(c).status);
  }
  *count = result(c).size;
  if (target != dst) {
    MPIZIP_CHECK(platform::copy_device_to_device(dst, target, capacity));
    return Status::kTruncated;
  }
  return Status::kOk;
}

}  // namespace mpizip::p2p
