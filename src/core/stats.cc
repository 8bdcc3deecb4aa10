#include "src/core/stats.h"

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
