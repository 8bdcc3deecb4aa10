// Where a collective's data is worked on: the CPU (host buffers: the CPU codec and reduce, which
// run at once) or the GPU (device buffers: the GPU codec and reduce kernels, enqueued on the
// backend's own stream). The collective engine (coll/allreduce.cc) drives either through this
// interface, so the algorithm is written once; a host rank and a device rank of one collective run
// the same algorithm on the same wire format.
//
// Work is ordered: each call is enqueued after the previous ones, and a fence completes once
// everything enqueued before it has. Data errors of the codec (a corrupt stream, a wrong size) are
// written to the job's Result, valid once a later fence is done; the return values report argument
// and launch errors only.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/codec_gpu.h"
#include "kernels/format.h"
#include "kernels/reduce.h"
#include "src/platform/status.h"

namespace mpizip::coll {

// One codec job and its outcome, with the GPU codec's layout (kernels/codec_gpu.h): compress reads
// `count` elements at src and writes a stream of at most dst_capacity bytes; decompress reads a
// stream of `count` bytes and writes at most dst_capacity bytes of elements.
using Job = kernels::gpu::Buffer;
using Result = kernels::gpu::DeviceResult;

class Fence {
 public:
  virtual ~Fence() = default;
  // kOk with *done = true once the work enqueued before the fence has completed; an error status
  // when the device failed.
  virtual Status test(bool* done) = 0;
};

// What one collective needs from a backend, sized before it starts.
struct Needs {
  uint64_t work_bytes = 0;     // buffers in the backend's memory (device or host)
  uint64_t staging_bytes = 0;  // pinned host buffers (device backends only)
  int results = 0;             // Result entries (device-visible)
  format::DType dtype = format::DType::kFp32;
  uint64_t codec_elems = 0;  // most elements one compress or decompress call covers
};

// One input of a fold: `count` elements at `data`, or, when stream_bytes > 0, a compressed stream
// of that many bytes at `data` that decodes to them; `temp` (room for `count` elements in the
// backend's memory) is where the backend may decode it.
struct FoldInput {
  const void* data = nullptr;
  uint64_t stream_bytes = 0;
  void* temp = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual bool device() const = 0;

  // Grows the backend's memory to `n`; keeps what is already large enough, so a backend reused by
  // the next collective of the communicator is sized once. The pointers below are valid until the
  // next reserve. Call only when no work is in flight.
  virtual Status reserve(const Needs& n) = 0;
  virtual uint8_t* work() = 0;     // 256-byte aligned
  virtual uint8_t* staging() = 0;  // 256-byte aligned; null for host backends
  virtual Result* results() = 0;

  // Compresses (decompresses) `n` (1..kernels::gpu::kMaxBatch) jobs of element type `t`.
  // Decompression of a stream of another element type gives kTypeMismatch in its result.
  virtual Status compress(format::DType t, const Job* jobs, int n, Result* results,
                          bool checksum) = 0;
  virtual Status decompress(format::DType t, const Job* jobs, int n, Result* results) = 0;
  // out = the fold of inputs[0..n) in order (kernels/reduce.h); n at most 64.
  virtual Status reduce(format::DType t, kernels::reduce::Op op, const void* const* inputs, int n,
                        void* out, uint64_t count) = 0;
  // out = the fold of inputs[0..n) in order, each stream decoded first; results[k] is the k-th
  // stream input's decoding, as decompress() reports it (a stream of another element count is an
  // error). This implementation decodes the streams into their temps and reduces; the GPU backend
  // decodes inside the fold (kernels/codec_gpu.h, decode_fold).
  virtual Status fold(format::DType t, kernels::reduce::Op op, const FoldInput* inputs, int n,
                      void* out, uint64_t count, Result* results);
  // Copies bytes between any two of the backend's, staging and (for host backends) user memory.
  virtual Status copy(void* dst, const void* src, uint64_t bytes) = 0;
  virtual Status fence(std::unique_ptr<Fence>* out) = 0;
  // Waits for everything enqueued (before the backend is reused after an error).
  virtual Status drain() = 0;
};

Status make_host_backend(std::unique_ptr<Backend>* out);
// kUnsupported in builds without the GPU codec; kNoDevice without a GPU.
Status make_device_backend(std::unique_ptr<Backend>* out);

}  // namespace mpizip::coll
