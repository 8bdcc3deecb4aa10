#include "src/platform/gpu_timing.h"

namespace mpizip::platform {

namespace {
constexpr int kKinds = static_cast<int>(GpuCall::kCount);
struct Counter {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> ns{0};
};
Counter g_counters[kKinds];
}  // namespace

namespace gpu_timing_detail {
std::atomic<bool> g_on{false};
void add(GpuCall c, uint64_t ns) {
  Counter& k = g_counters[static_cast<int>(c)];
  k.calls.fetch_add(1, std::memory_order_relaxed);
  k.ns.fetch_add(ns, std::memory_order_relaxed);
}
}  // namespace gpu_timing_detail

void gpu_timing_enable(bool on) { gpu_timing_detail::g_on.store(on, std::memory_order_relaxed); }

const char* gpu_call_name(GpuCall c) {
  switch (c) {
    case GpuCall::kCopyToHost: return "copy to host";
    case GpuCall::kCopyToDevice: return "copy to device, default stream synchronised";
    case GpuCall::kCopyPinnedToDevice: return "copy to device (pinned)";
    case GpuCall::kCopyDeviceToDevice: return "copy device to device";
    case GpuCall::kCopyAsync: return "copy queued";
    case GpuCall::kDefaultStreamSync: return "default stream synchronised";
    case GpuCall::kStreamSync: return "stream synchronised";
    case GpuCall::kEventRecord: return "event recorded";
    case GpuCall::kEventQuery: return "event queried";
    case GpuCall::kEventWait: return "event waited for";
    case GpuCall::kPointerQuery: return "pointer queried";
    case GpuCall::kEngineLaunch: return "engine kernel launched";
    case GpuCall::kEngineSync: return "engine kernel waited for";
    case GpuCall::kCount: break;
  }
  return "?";
}

std::vector<GpuCallTime> gpu_timing() {
  std::vector<GpuCallTime> out;
  for (int i = 0; i < kKinds; ++i) {
    const uint64_t n = g_counters[i].calls.load(std::memory_order_relaxed);
    if (n > 0) out.push_back({static_cast<GpuCall>(i), n, g_counters[i].ns.load(std::memory_order_relaxed)});
  }
  return out;
}

}  // namespace mpizip::platform
