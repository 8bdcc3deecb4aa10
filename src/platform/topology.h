// Machine topology through hwloc: what mpizip-info shows now, and where placement decisions
// (progress thread, staging buffers, NIC) will read from.
#pragma once

#include <string>

namespace mpizip::platform {

struct Topology {
  bool available = false;  // hwloc in the build and the topology loaded
  std::string why_not;     // when not available
  int numa_nodes = 0;
  int cores = 0;
  int hw_threads = 0;
};

Topology topology();

}  // namespace mpizip::platform
