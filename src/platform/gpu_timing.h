// Time spent inside the GPU runtime's calls, per kind of call, for MPIZIP_STATS=1: where a small
// device message's microseconds go (a copy and its synchronisation, an event polled, a pointer
// queried). Core switches it on at MPI_Init when the statistics are on and prints it at
// MPI_Finalize; off, each timed call costs one relaxed load.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace mpizip::platform {

enum class GpuCall : uint8_t {
  kCopyToHost,          // cudaMemcpy device to host
  kCopyToDevice,        // cudaMemcpy host to device, then the default stream's sync
  kCopyPinnedToDevice,  // cudaMemcpy pinned host to device
  kCopyDeviceToDevice,  // cudaMemcpy device to device
  kCopyAsync,           // cudaMemcpyAsync (queued only)
  kDefaultStreamSync,   // cudaStreamSynchronize of the legacy default stream
  kStreamSync,          // cudaStreamSynchronize of one of MPIZip's streams
  kEventRecord,         // cudaEventRecord (the event's creation included the first time)
  kEventQuery,          // cudaEventQuery, done or not
  kEventWait,           // cudaEventSynchronize
  kPointerQuery,        // cudaPointerGetAttributes (where a buffer lives, uncached)
  kEngineLaunch,        // the intra-node engine's kernel launch
  kEngineSync,          // the wait for the intra-node engine's kernel
  kCount
};

const char* gpu_call_name(GpuCall c);

namespace gpu_timing_detail {
extern std::atomic<bool> g_on;
void add(GpuCall c, uint64_t ns);
}  // namespace gpu_timing_detail

void gpu_timing_enable(bool on);
inline bool gpu_timing_on() { return gpu_timing_detail::g_on.load(std::memory_order_relaxed); }

struct GpuCallTime {
  GpuCall call;
  uint64_t calls;
  uint64_t ns;
};
// The kinds of call made so far, with their counts and total time.
std::vector<GpuCallTime> gpu_timing();

// Times its scope as one call of kind `c` (when the timing is on).
class GpuTimer {
 public:
  explicit GpuTimer(GpuCall c) : call_(c), on_(gpu_timing_on()) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  ~GpuTimer() {
    if (on_) {
      const auto d = std::chrono::steady_clock::now() - start_;
      gpu_timing_detail::add(call_,
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
    }
  }
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

 private:
  GpuCall call_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace mpizip::platform
