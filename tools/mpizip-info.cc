// mpizip-info: what this MPIZip build is, what it finds on this machine, and every setting with its
// current value, default and help. Does not initialise MPI.
#include <cstdio>
#include <cstring>
#include <string>

#include "config.h"
#include "cost/model.h"
#include "src/core/mpi_beneath.h"
#include "src/core/settings.h"
#include "src/platform/device.h"
#include "src/platform/topology.h"
#include "src/transport/ucx_version.h"

namespace {

const char* on_off(bool b) { return b ? "on" : "off"; }

void print_build() {
#if defined(MPIZIP_HAVE_CUDA)
  constexpr bool kCuda = true;
#else
  constexpr bool kCuda = false;
#endif
#if defined(MPIZIP_HAVE_HIP)
  constexpr bool kHip = true;
#else
  constexpr bool kHip = false;
#endif
#if defined(MPIZIP_HAVE_UCX)
  constexpr bool kUcx = true;
#else
  constexpr bool kUcx = false;
#endif
#if defined(MPIZIP_HAVE_HWLOC)
  constexpr bool kHwloc = true;
#else
  constexpr bool kHwloc = false;
#endif
  std::printf("MPIZip %s\n\n", PACKAGE_VERSION);
  std::printf("Build\n");
  std::printf("  CUDA   %s\n  HIP    %s\n  UCX    %s\n  hwloc  %s\n", on_off(kCuda), on_off(kHip),
              on_off(kUcx), on_off(kHwloc));
  std::printf("  MPI    %s\n", MPI_FLAVOR);
}

void print_machine() {
  std::printf("\nMachine\n");
  std::string why;
  auto gpus = mpizip::platform::gpus(&why);
  std::printf("  GPU backend  %s\n", mpizip::platform::gpu_backend().c_str());
  if (gpus.empty()) {
    std::printf("  GPUs         none (%s)\n", why.c_str());
  }
  for (const auto& g : gpus) {
    std::printf("  GPU %d        %s, %d SMs, compute capability %d.%d, %.1f GiB, PCI %s\n", g.index,
                g.name.c_str(), g.multiprocessors, g.cc_major, g.cc_minor,
                g.memory_bytes / 1073741824.0, g.pci_bus_id.c_str());
    // Where MPIZip places the progress thread and the pinned staging memory for this GPU.
    auto p = mpizip::platform::gpu_placement(g.pci_bus_id);
    if (!p.known) {
      std::printf("               placement unknown (%s)\n", p.why_not.c_str());
      continue;
    }
    std::printf("               nearest cores %s, NUMA node(s) %s (progress thread, pinned "
                "staging memory)\n", p.cpus.c_str(), p.numa_nodes.empty() ? "-" : p.numa_nodes.c_str());
    std::string nics;
    for (const auto& n : p.nics) nics += (nics.empty() ? "" : ", ") + n;
    std::printf("               network devices, nearest first: %s\n",
                nics.empty() ? "none found" : nics.c_str());
  }
  if (!gpus.empty()) {
    // The facts the intra-node collectives decide from (coll/tma_coll.cc; MPIZIP_GPU_SHARING
    // overrides the second).
    std::printf("  GPU sharing  %s; kernels of processes sharing it %s\n",
                mpizip::platform::current_gpu_identity().c_str(),
                mpizip::platform::gpu_processes_concurrent()
                    ? "run side by side (MPS)"
                    : "are time-sliced (no MPS found)");
  }
  auto t = mpizip::platform::topology();
  if (t.available) {
    std::printf("  topology     %d NUMA node(s), %d cores, %d hardware threads (hwloc)\n",
                t.numa_nodes, t.cores, t.hw_threads);
  } else {
    std::printf("  topology     unknown (%s)\n", t.why_not.c_str());
  }
  std::printf("  transport    %s\n", mpizip::transport::ucx_description().c_str());
  {
    const auto beneath = mpizip::core::find_mpi_cuda_awareness(mpizip::core::settings().mpi_cuda_aware);
    std::printf("  MPI beneath  %s device buffers (%s)\n", beneath.aware ? "takes" : "does not take",
                beneath.how.c_str());
  }
}

// What a rank may hold at most, from the current settings (the bounds of src/platform/buffers.h
// and src/transport/staging.h).
void print_memory() {
  const mpizip::core::Settings& s = mpizip::core::settings();
  const double mib = 1024.0 * 1024.0;
  std::printf("\nMemory per rank (bounds, from the settings)\n");
  std::printf("  pinned host  %.0f MiB (MPIZIP_STAGING_BYTES): staging of device buffers by the "
              "MPI-library and UCX transports, in 4 MiB pieces, and pooled host buffers "
              "(compressed payloads, staged point-to-point and collectives); beyond it, pageable "
              "memory\n", static_cast<double>(s.staging_bytes) / mib);
  std::printf("  device       %.0f MiB kept for compressed streams in flight "
              "(MPIZIP_DEVICE_POOL_BYTES); a larger message takes a block of its own for its "
              "duration; the GPU codec's workspace adds under 1%% of the largest message\n",
              static_cast<double>(s.device_pool_bytes) / mib);
}

// Which progress is in force (docs/DESIGN.md, "Progress"), from the current settings.
void print_progress() {
  const mpizip::core::Settings& s = mpizip::core::settings();
  std::printf("\nProgress (docs/DESIGN.md, \"Progress\")\n");
  std::printf("  MPI calls    only from the application's threads, at the thread level it asked for "
              "(MPIZip never raises it); a send completes once its bytes are MPIZip's or the "
              "MPI library's, so no operation waits for its peer's next MPIZip call\n");
  if (!s.enable) {
    std::printf("  helper       none (MPIZIP_ENABLE=0: every call passes through)\n");
  } else if (s.progress_thread == 2) {
    std::printf("  helper       off (MPIZIP_PROGRESS_THREAD=off): UCX transfers and CUDA IPC pulls "
                "advance inside MPIZip's calls only\n");
  } else {
    std::printf("  helper       on where the protocol runs (MPIZIP_PROGRESS_THREAD=%s): one thread "
                "per process that advances MPIZip's UCX worker and CUDA IPC pulls under way, "
                "sleeps while nothing is, and never calls MPI\n",
                s.progress_thread == 1 ? "on" : "auto");
  }
}

// What the cost model decides before it has measured anything (cost/model.h): its seeds, and from
// which size a message of each type at its typical ratio is compressed on links users run on.
void print_cost_model() {
  using mpizip::cost::Model;
  using mpizip::cost::Side;
  using mpizip::format::DType;
  const mpizip::core::Settings& s = mpizip::core::settings();
  std::printf("\nWhen to compress (docs/DESIGN.md, \"When a point-to-point message is compressed\")\n");
  Model seed(2);
  std::printf("  seeds        GPU codec %.0f GB/s plus %.0f us a pass, CPU codec %.1f GB/s (replaced by each rank's "
              "measurements); a peer's link %.0f GB/s until measured or given by the transport; "
              "compressed where predicted %.0f%% faster\n",
              seed.encode_rate(DType::kBf16, Side::kGpu) / 1e9, seed.codec_latency(Side::kGpu) * 1e6,
              seed.encode_rate(DType::kBf16, Side::kCpu) / 1e9, seed.link(1) / 1e9,
              Model::kMargin * 100);
  const uint64_t floor = std::max<uint64_t>(s.gpu_min_bytes, 1);
  // From which size each link compresses, a message with `others` more to its peer in flight.
  auto crossovers = [&](DType t, uint32_t others) {
    std::string line;
    for (double gbps : {12.5, 25.0, 47.0, 100.0, 200.0, 400.0}) {
      Model m(2);
      m.set_link(1, gbps * 1e9);
      uint64_t from = 0;
      for (uint64_t b = floor; b <= (uint64_t{1} << 30) && from == 0; b *= 2)
        if (m.predict(1, t, Side::kGpu, b, Model::typical_ratio(t), others).compress) from = b;
      char cell[64];
      if (from == 0)
        std::snprintf(cell, sizeof cell, "%snever at %g", line.empty() ? "" : ", ", gbps);
      else
        std::snprintf(cell, sizeof cell, "%sfrom %llu KiB at %g", line.empty() ? "" : ", ",
                      static_cast<unsigned long long>(from >> 10), gbps);
      line += cell;
    }
    return line + " GB/s";
  };
  for (DType t : {DType::kBf16, DType::kFp32}) {
    std::printf("  device %-5s ratio %.2f: among 64 in flight %s; alone %s (MPIZIP_COMPRESS=%s)\n",
                t == DType::kBf16 ? "bf16" : "fp32", Model::typical_ratio(t),
                crossovers(t, 63).c_str(), crossovers(t, 0).c_str(),
                s.compress == 1 ? "always: every one" : s.compress == 2 ? "never: none" : "auto");
  }
}

void print_settings() {
  std::printf("\nSettings (environment variables)\n");
  for (const auto& s : mpizip::core::describe_settings()) {
    std::printf("  %-22s = %-8s (default %s%s%s%s%s%s%s%s)\n", s.env, s.current.c_str(),
                s.default_value, *s.choices ? "; one of " : "", s.choices,
                s.range.empty() ? "" : ("; " + s.range).c_str(),
                s.agreed ? "; the same on every rank" : "", *s.hint ? "; info hint " : "", s.hint,
                s.from_env ? "; set" : "");
    std::printf("  %-22s   %s\n", "", s.help);
  }
}

// `--settings-markdown`: the README's settings table, generated from the same declarations.
void print_settings_markdown() {
  std::printf("| variable | type | default | same on every rank | info hint | meaning |\n"
              "| --- | --- | --- | --- | --- | --- |\n");
  for (const auto& s : mpizip::core::describe_settings()) {
    std::string choices;  // '|' separates table cells in Markdown
    for (const char* c = s.choices; *c; ++c) choices += *c == '|' ? "\\|" : std::string(1, *c);
    const std::string hint = *s.hint ? std::string("`") + s.hint + "`" : "";
    std::printf("| `%s` | %s%s%s%s%s | `%s` | %s | %s | %s |\n", s.env, s.type,
                *s.choices ? ": " : "", choices.c_str(), s.range.empty() ? "" : ", ",
                s.range.c_str(), s.default_value, s.agreed ? "yes" : "", hint.c_str(), s.help);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--settings-markdown") == 0) {
    print_settings_markdown();
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "usage: mpizip-info [--settings-markdown]\n");
    return 2;
  }
  print_build();
  print_machine();
  print_memory();
  print_progress();
  print_cost_model();
  print_settings();
  return 0;
}
