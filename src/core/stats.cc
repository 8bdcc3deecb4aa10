#include "src/core/stats.h"

#include <cstdio>
#include <string>

#include "src/platform/log.h"

namespace mpizip::core {

std::atomic<bool> g_stats_on{false};

void stats_record(const CallSite& site, MPI_Comm comm, uint64_t bytes) {
  CommState* s = comm == MPI_COMM_NULL ? process_state() : comm_state(comm);
  if (s == nullptr) return;
  CallCounters& c = s->counters[site.index];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  s->names[site.index].store(site.name, std::memory_order_relaxed);
}

uint64_t bytes_of(int64_t count, MPI_Datatype type) {
  int size = 0;
  if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) {
    return 0;
  }
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

namespace {

std::string comm_label(CommState& s) {
  MPI_Comm h = s.handle.load();
  std::string label = s.origin;
  if (h != MPI_COMM_NULL && h != MPI_COMM_WORLD && h != MPI_COMM_SELF) {
    char name[MPI_MAX_OBJECT_NAME] = {0};
    int len = 0;
    if (PMPI_Comm_get_name(h, name, &len) == MPI_SUCCESS && len > 0) {
      label = std::string("'") + name + "' (" + s.origin + ")";
    }
  }
  return label;
}

const char* dtype_name(int t) {
  // Row 0: the raw bytes of other signatures (signatures that are not of a float type).
  static const char* const names[] = {"bytes", "bf16", "fp16", "fp32", "fp64", "fp8e4m3", "fp8e5m2"};
  return t >= 0 && t <= 6 ? names[t] : "?";
}

// Protocol traffic per direction and element type: messages, how many were compressed, the
// application's bytes, the bytes that travelled and their ratio; codec and staging time.
void print_protocol(CommState& s, const std::string& label) {
  std::string line;
  char buf[256];
  for (int dir = 0; dir < 2; ++dir) {
    auto& by_type = dir == 0 ? s.sent : s.received;
    for (int t = 0; t <= 6; ++t) {
      const TypeCounters& c = by_type[t];
      uint64_t msgs = c.messages.load(std::memory_order_relaxed);
      if (msgs == 0) continue;
      uint64_t app = c.app_bytes.load(std::memory_order_relaxed);
      uint64_t wire = c.wire_bytes.load(std::memory_order_relaxed);
      std::snprintf(buf, sizeof buf, "%s%s %s messages=%llu compressed=%llu bytes=%llu wire=%llu ratio=%.3f",
                    line.empty() ? "" : "; ", dir == 0 ? "sent" : "received", dtype_name(t),
                    static_cast<unsigned long long>(msgs),
                    static_cast<unsigned long long>(c.compressed.load(std::memory_order_relaxed)),
                    static_cast<unsigned long long>(app), static_cast<unsigned long long>(wire),
                    app ? static_cast<double>(wire) / static_cast<double>(app) : 1.0);
      line += buf;
    }
  }
  const uint64_t bare_sent = s.bare_sent.load(std::memory_order_relaxed);
  const uint64_t bare_received = s.bare_received.load(std::memory_order_relaxed);
  if (bare_sent != 0 || bare_received != 0) {
    std::snprintf(buf, sizeof buf, "%sbare sent=%llu received=%llu", line.empty() ? "" : "; ",
                  static_cast<unsigned long long>(bare_sent),
                  static_cast<unsigned long long>(bare_received));
    line += buf;
  }
  if (const uint64_t e = s.engine_collectives.load(std::memory_order_relaxed); e != 0) {
    std::snprintf(buf, sizeof buf,
                  "%sintra-node engine collectives=%llu runtime copies=%llu staged=%llu",
                  line.empty() ? "" : "; ", static_cast<unsigned long long>(e),
                  static_cast<unsigned long long>(
                      s.engine_runtime_copies.load(std::memory_order_relaxed)),
                  static_cast<unsigned long long>(s.engine_staged.load(std::memory_order_relaxed)));
    line += buf;
  }
  if (const uint64_t h = s.hierarchical_collectives.load(std::memory_order_relaxed); h != 0) {
    std::snprintf(buf, sizeof buf, "%shierarchical collectives=%llu", line.empty() ? "" : "; ",
                  static_cast<unsigned long long>(h));
    line += buf;
  }
  if (const uint64_t n = s.pairwise_collectives.load(std::memory_order_relaxed); n != 0) {
    std::snprintf(buf, sizeof buf, "%spairwise collectives=%llu", line.empty() ? "" : "; ",
                  static_cast<unsigned long long>(n));
    line += buf;
  }
  if (const uint64_t n = s.ratios.incompressible_streams(); n != 0) {
    std::snprintf(buf, sizeof buf, "%sincompressible streams=%llu sent raw=%llu",
                  line.empty() ? "" : "; ", static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(s.ratios.skipped_messages()));
    line += buf;
  }
  if (const uint64_t n = s.nonblocking_collectives.load(std::memory_order_relaxed); n != 0) {
    std::snprintf(buf, sizeof buf, "%snon-blocking collectives=%llu", line.empty() ? "" : "; ",
                  static_cast<unsigned long long>(n));
    line += buf;
  }
  if (const uint64_t n = s.deferred_collectives.load(std::memory_order_relaxed); n != 0) {
    std::snprintf(buf, sizeof buf, "%sdeferred collectives=%llu mpizip=%llu", line.empty() ? "" : "; ",
                  static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(s.deferred_mpizip.load(std::memory_order_relaxed)));
    line += buf;
  }
  if (s.cost) {
    const cost::Report r = s.cost->report();
    if (r.collectives_compressed + r.collectives_raw != 0) {
      std::snprintf(buf, sizeof buf, "%scost model collectives: compressed=%llu raw=%llu",
                    line.empty() ? "" : "; ",
                    static_cast<unsigned long long>(r.collectives_compressed),
                    static_cast<unsigned long long>(r.collectives_raw));
      line += buf;
    }
    if (r.compressed + r.raw != 0) {
      std::snprintf(buf, sizeof buf,
                    "%scost model: compressed=%llu raw=%llu predicted=%.3f ms observed=%.3f ms "
                    "links=%.2f-%.2f GB/s",
                    line.empty() ? "" : "; ", static_cast<unsigned long long>(r.compressed),
                    static_cast<unsigned long long>(r.raw), r.predicted_seconds * 1e3,
                    r.observed_seconds * 1e3, r.link_min / 1e9, r.link_max / 1e9);
      line += buf;
      const size_t gpu = static_cast<size_t>(cost::Side::kGpu), cpu = static_cast<size_t>(cost::Side::kCpu);
      if (r.codec_rate[gpu] > 0) {
        std::snprintf(buf, sizeof buf, " gpu codec=%.0f GB/s+%.0f us", r.codec_rate[gpu] / 1e9,
                      r.codec_latency[gpu] * 1e6);
        line += buf;
      }
      if (r.codec_rate[cpu] > 0) {
        std::snprintf(buf, sizeof buf, " cpu codec=%.2f GB/s", r.codec_rate[cpu] / 1e9);
        line += buf;
      }
    }
  }
  if (line.empty()) return;
  std::snprintf(buf, sizeof buf, "; codec %.3f ms, staging %.3f ms",
                s.codec_ns.load(std::memory_order_relaxed) / 1e6,
                s.staging_ns.load(std::memory_order_relaxed) / 1e6);
  log::report("stats", "%s: protocol: %s%s", label.c_str(), line.c_str(), buf);
}

void print_state(CommState& s, const std::string& label) {
  std::string line;
  for (int i = 0; i < kMaxCallSites; ++i) {
    uint64_t calls = s.counters[i].calls.load(std::memory_order_relaxed);
    if (calls == 0) continue;
    uint64_t bytes = s.counters[i].bytes.load(std::memory_order_relaxed);
    if (!line.empty()) line += "; ";
    line += std::string(s.names[i].load()) + " calls=" + std::to_string(calls) +
            " bytes=" + std::to_string(bytes);
  }
  if (!line.empty()) log::report("stats", "%s: %s", label.c_str(), line.c_str());
  print_protocol(s, label);
}

}  // namespace

void stats_print() {
  for_each_comm_state([](CommState& s) {
    std::string label = "comm " + std::to_string(s.id) + " " + comm_label(s) + ", " +
                        std::to_string(s.size) + " ranks" +
                        (s.freed.load() ? ", freed" : "");
    print_state(s, label);
  });
  if (CommState* p = process_state()) print_state(*p, "no communicator");
}

}  // namespace mpizip::core
